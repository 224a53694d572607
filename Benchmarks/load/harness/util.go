package harness

import (
	"fmt"
	"log"
	"os"
	"sort"
	"syscall"
	"time"
)

// Percentile is the p-th percentile (nearest rank) of sorted, which must not be empty.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	rank := int(float64(len(sorted))*p/100+0.999999) - 1
	if rank < 0 {
		rank = 0
	}
	if rank >= len(sorted) {
		rank = len(sorted) - 1
	}
	return sorted[rank]
}

// Median is the median of values (the mean of the middle two for an even count; 0 for
// none). values is left as it is.
func Median(values []float64) float64 {
	if len(values) == 0 {
		return 0
	}
	sorted := append([]float64(nil), values...)
	sort.Float64s(sorted)
	middle := len(sorted) / 2
	if len(sorted)%2 == 1 {
		return sorted[middle]
	}
	return (sorted[middle-1] + sorted[middle]) / 2
}

// Milliseconds is d in milliseconds.
func Milliseconds(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// EnvInt is the integer in the environment variable name, or fallback.
func EnvInt(name string, fallback int) int {
	var value int
	if _, err := fmt.Sscanf(os.Getenv(name), "%d", &value); err == nil {
		return value
	}
	return fallback
}

// Yes is a report's "met" column: "yes", or "NO".
func Yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "NO"
}

// RaiseFileLimit raises this process's open-file limit to its hard limit, and fails if that
// is below need.
func RaiseFileLimit(need int) error {
	var limit syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &limit); err != nil {
		return err
	}
	limit.Cur = limit.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &limit); err != nil {
		return err
	}
	if int(limit.Cur) < need {
		return fmt.Errorf("the open-file limit is %d, %d are needed (raise the hard limit: ulimit -Hn)", limit.Cur, need)
	}
	return nil
}

// Check ends the tool with log.Fatal if err is not nil (Workspace.Check also cleans up).
func Check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

// EnvDuration is the duration in the environment variable name ("10s", "1m"), or fallback.
func EnvDuration(name string, fallback time.Duration) time.Duration {
	if value, err := time.ParseDuration(os.Getenv(name)); err == nil {
		return value
	}
	return fallback
}

// EnvString is the environment variable name, or fallback when it is empty.
func EnvString(name, fallback string) string {
	if value := os.Getenv(name); value != "" {
		return value
	}
	return fallback
}
