package cmd

import (
	"fmt"
	"os"
	"time"
)

// testClockSkewEnv shifts the local clock the scan reads, for tests only: the e2e suite plays a
// workstation clock ahead of the cluster, or a scan that outlasts a Lease, without sleeping. It is
// not a user setting and is documented nowhere but in docs/architecture.md's testing notes.
const testClockSkewEnv = "WORKLOADDOCTOR_TEST_CLOCK_SKEW"

// localClock is time.Now, shifted by testClockSkewEnv when it is set.
func localClock() (func() time.Time, error) {
	v := os.Getenv(testClockSkewEnv)
	if v == "" {
		return time.Now, nil
	}
	skew, err := time.ParseDuration(v)
	if err != nil {
		return nil, fmt.Errorf("invalid %s %q: %w", testClockSkewEnv, v, err)
	}
	return func() time.Time { return time.Now().Add(skew) }, nil
}
