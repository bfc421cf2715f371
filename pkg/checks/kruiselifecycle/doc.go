// Package kruiselifecycle holds the checks of OpenKruise workloads whose controller stopped
// moving them: stuck-preparing-normal (pods that stay in lifecycle state PreparingNormal) and
// expectations-unsatisfied (CloneSets whose status is frozen). Both rest on one verdict, whether
// a CloneSet's status is frozen, and on the kruise-manager environment of internal/kruiseenv.
package kruiselifecycle

import _ "embed" // the checks' documentation

// The prose of each check and its root causes (checks.Document).
var (
	//go:embed preparingnormal.md
	preparingNormalDoc string
	//go:embed expectations.md
	expectationsDoc string
)
