package kruisemanager

import (
	"fmt"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/knowledge"
)

// ReleaseAtLeast reports whether the kruise release is min or later.
func ReleaseAtLeast(version, min string) (bool, error) {
	v, err := knowledge.ParseVersion(version)
	if err != nil {
		return false, fmt.Errorf("kruise-manager version %q: %w", version, err)
	}
	m, err := knowledge.ParseVersion(min)
	if err != nil {
		return false, fmt.Errorf("kruise-manager version %q: %w", min, err)
	}
	return v.AtLeast(m), nil
}
