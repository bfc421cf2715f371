// Package terminating holds the stuck-terminating check: deletions that do not finish, of pods
// (node, kubelet, kwok, OpenKruise hooks), namespaces and objects of any other resource (finalizer
// owners, Cluster API pauses, finalizer re-add races). Each finding names who must finish the
// deletion and why it has not.
package terminating

import _ "embed" // the check's documentation

// documentation is the prose of the check and its root causes (checks.Document).
//
//go:embed terminating.md
var documentation string
