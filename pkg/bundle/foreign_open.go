package bundle

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/bundle/foreign"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/bundle/source"
)

// openForeign opens a capture that is not the tool's own: a troubleshoot.sh support bundle or
// a directory of kubectl outputs.
func openForeign(fsys fs.FS) (*source.Source, error) {
	src, err := foreign.Open(fsys)
	if errors.Is(err, foreign.ErrNotRecognized) {
		return nil, fmt.Errorf("not a capture: no bundle.yaml, no cluster-resources/ and no Kubernetes objects in .yaml or .json files")
	}
	return src, err
}
