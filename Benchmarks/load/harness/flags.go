package harness

import (
	"flag"
	"time"
)

// WrkFlags are the flags of the tools that compare phases under wrk on fresh services (auth,
// sharing-cost, tracing-cost), each defaulting to the environment variable in its usage.
type WrkFlags struct {
	Duration    time.Duration // wrk -d of a phase
	Connections int           // wrk -c
	Workers     int           // the service's
	Rounds      int           // rounds of every phase (with rounds)
	QuietMax    int           // before measuring, wait until the machine is at most this % busy…
	QuietWait   time.Duration // … at most this long
}

// DeclareWrkFlags declares -duration, -connections and -workers, and with rounds -rounds,
// -quiet-max and -quiet-wait too, for flag.Parse to set.
func DeclareWrkFlags(rounds bool) *WrkFlags {
	f := &WrkFlags{}
	flag.DurationVar(&f.Duration, "duration", EnvDuration("DURATION", 10*time.Second), "wrk -d of each phase (env DURATION)")
	flag.IntVar(&f.Connections, "connections", EnvInt("CONNECTIONS", 100), "wrk -c (env CONNECTIONS)")
	flag.IntVar(&f.Workers, "workers", EnvInt("WORKERS", 2), "the service's workers (env WORKERS)")
	if rounds {
		flag.IntVar(&f.Rounds, "rounds", EnvInt("ROUNDS", 3), "rounds of every phase, the order reversed every other round (env ROUNDS)")
		flag.IntVar(&f.QuietMax, "quiet-max", EnvInt("QUIET_MAX", 15), "before measuring, wait until the machine is at most this % busy (env QUIET_MAX)")
		flag.DurationVar(&f.QuietWait, "quiet-wait", time.Duration(EnvInt("QUIET_WAIT", 120))*time.Second, "… at most this long (env QUIET_WAIT, in seconds)")
	}
	return f
}

// RoundFlags are the flags of the tools that measure targets side by side with wrk in
// interleaved rounds (workers, foundation; RoundFlags.Measure), each defaulting to the
// environment variable in its usage.
type RoundFlags struct {
	Rounds      int           // interleaved rounds
	Duration    time.Duration // wrk -d of a measured run
	Connections int           // wrk -c
}

// DeclareRoundFlags declares -rounds (default `rounds`), -duration (10 s) and -connections
// (64) for flag.Parse to set.
func DeclareRoundFlags(rounds int) *RoundFlags {
	f := &RoundFlags{}
	flag.IntVar(&f.Rounds, "rounds", EnvInt("ROUNDS", rounds), "interleaved rounds (env ROUNDS)")
	flag.DurationVar(&f.Duration, "duration", EnvDuration("DURATION", 10*time.Second), "wrk -d of a measured run (env DURATION)")
	flag.IntVar(&f.Connections, "connections", EnvInt("CONNECTIONS", 64), "wrk -c (env CONNECTIONS)")
	return f
}
