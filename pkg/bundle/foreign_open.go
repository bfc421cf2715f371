package bundle

import (
	"errors"
	"io/fs"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/bundle/source"
)

// openForeign opens a capture that is not the tool's own: a troubleshoot.sh support bundle or
// a directory of kubectl lists (pkg/bundle/foreign, wired in at its merge).
func openForeign(fs.FS) (*source.Source, error) {
	return nil, errors.New("not a workloaddoctor bundle (no bundle.yaml)")
}
