// Package resizepolicy holds the resize-policy-drift check: containers[].resizePolicy of the pods
// of OpenKruise workloads that update in place, compared with the workload template or the
// SidecarSet, and why a difference stays (an old kruise-manager, an immutable field, apiserver
// defaulting).
package resizepolicy

import _ "embed" // the check's documentation

// documentation is the prose of the check and its root causes (checks.Document).
//
//go:embed resizepolicy.md
var documentation string
