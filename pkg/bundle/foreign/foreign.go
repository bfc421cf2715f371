// Package foreign opens captures made by other tools: troubleshoot.sh support bundles
// (cluster-resources/...) and directories of `kubectl get -o yaml|json` outputs. Each opens
// into a source.Source whose transport answers a scan's reads from what was captured, and
// fails the reads it holds nothing for with *source.NotCapturedError, so the scan names those
// inputs as unread instead of taking them for empty (what sbctl answers).
package foreign

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/bundle/source"
)

// ErrNotRecognized is the error Open wraps when fsys is neither format.
var ErrNotRecognized = errors.New("not a support bundle or a directory of kubectl outputs")

// Open reads a support bundle (cluster-resources/ at the root or in its one top-level directory)
// or else a directory of kubectl outputs (any .yaml, .yml or .json files, nested directories
// allowed).
func Open(fsys fs.FS) (*source.Source, error) {
	// The tool's own bundle is not for this package to read as kubectl outputs.
	if _, err := fs.Stat(fsys, "bundle.yaml"); err == nil {
		return nil, fmt.Errorf("%w: bundle.yaml marks a capture of this tool", ErrNotRecognized)
	}
	var (
		s      *store
		format source.Format
	)
	if root, ok := supportBundleRoot(fsys); ok {
		sub, err := fs.Sub(fsys, root)
		if err != nil {
			return nil, fmt.Errorf("open support bundle %s: %w", root, err)
		}
		if s, err = readSupportBundle(sub); err != nil {
			return nil, fmt.Errorf("read support bundle: %w", err)
		}
		format = source.FormatSupportBundle
	} else {
		var found bool
		var err error
		if s, found, err = readKubectlLists(fsys); err != nil {
			return nil, fmt.Errorf("read kubectl outputs: %w", err)
		}
		if !found {
			return nil, fmt.Errorf("%w: no cluster-resources/ directory and no Kubernetes objects in .yaml or .json files", ErrNotRecognized)
		}
		format = source.FormatKubectlLists
	}
	src := &source.Source{Format: format, ClusterID: s.clusterID()}
	if s.version != nil {
		src.ServerVersion = s.version.GitVersion
	} else if format == source.FormatKubectlLists {
		s.warnings = append(s.warnings, "kubectl outputs do not record the server version")
	}
	// Neither format records when it was made: the newest time an object records is the latest
	// moment known to be before the capture. Ages measured from it are lower bounds, so a stuck
	// state may be missed but none is invented.
	src.CapturedAt = s.newest()
	if src.CapturedAt.IsZero() {
		s.warnings = append(s.warnings, "no captured object records a time: ages cannot be measured")
	} else {
		s.warnings = append(s.warnings, fmt.Sprintf("the %s does not record when it was made: ages are measured at %s, "+
			"the newest time its objects record, and are lower bounds", format, src.CapturedAt.Format(time.RFC3339)))
	}
	src.Transport = newTransport(s, format, src.CapturedAt)
	src.Warnings = s.warnings
	return src, nil
}
