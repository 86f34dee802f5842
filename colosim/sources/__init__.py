"""Where realizations come from: the trace formats (Google 2011, Google
2019), the built-in population and a writer of traces in the 2011 format,
realization into stores, and the resolution of a config's source."""
