// Package builtin assembles the checks the plugin ships. It sits apart from pkg/checks so the
// checks, which import pkg/checks for its types, can be listed without an import cycle.
package builtin

import (
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/kruiselifecycle"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/resizepolicy"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/rollout"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/terminating"
)

// Checks returns a registry of every built-in check.
func Checks() *checks.Registry {
	return checks.NewRegistry(
		kruiselifecycle.StuckPreparingNormal(),
		kruiselifecycle.ExpectationsUnsatisfied(),
		terminating.New(),
		resizepolicy.New(),
		rollout.New(),
	)
}
