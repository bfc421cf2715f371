// Package source describes a captured cluster that a scan reads instead of a live one: the
// answers a transport gives from what was captured, and what is known about the capture.
// The formats (the tool's own bundles, support bundles, directories of `kubectl get` lists)
// each open into a Source.
package source

import (
	"fmt"
	"net/http"
	"time"
)

// Format names a kind of capture.
type Format string

const (
	// FormatBundle is an archive or directory written by `capture`.
	FormatBundle Format = "bundle"
	// FormatSupportBundle is a troubleshoot.sh support bundle (cluster-resources/...).
	FormatSupportBundle Format = "support-bundle"
	// FormatKubectlLists is a directory of `kubectl get -o yaml|json` lists.
	FormatKubectlLists Format = "kubectl-lists"
)

// Source is an opened capture.
type Source struct {
	Format Format
	// CapturedAt is the time ages are measured at.
	CapturedAt time.Time
	// ServerVersion, ClusterID and Context describe the captured cluster, when known.
	ServerVersion string
	ClusterID     string
	Context       string
	// Transport answers the API requests a scan makes from the capture. A request the capture
	// cannot answer fails with *NotCapturedError: never an empty list, never NotFound.
	Transport http.RoundTripper
	// Warnings say what a user should know about reading this capture (how its time was
	// chosen, files that were skipped).
	Warnings []string
}

// NotCapturedError is the answer to a request the capture holds nothing for: the scan did not
// look there, so it records the input as unread.
type NotCapturedError struct {
	Method, Path string
	Format       Format
}

func (e *NotCapturedError) Error() string {
	return fmt.Sprintf("%s %s is not in the %s", e.Method, e.Path, e.Format)
}
