// The entry point only parses the command line; everything runs in TributaryServer, off
// the main actor (pipelines in top-level code would trip executor checks at run time).
Tributary.main()
