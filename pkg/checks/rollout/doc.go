// Package rollout holds the rollout-stalled check: OpenKruise CloneSets, Advanced StatefulSets,
// Advanced DaemonSets and SidecarSets whose update or scaling stopped making progress, and why,
// read from the pods of the new revision and the workload's own state.
package rollout

import _ "embed" // the check's documentation

// documentation is the prose of the check and its root causes (checks.Document).
//
//go:embed rollout.md
var documentation string
