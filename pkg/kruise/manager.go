package kruise

import (
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/knowledge"
)

// Manager is what the checks know about the running kruise-manager, read from its Deployment.
type Manager struct {
	Deployment *appsv1.Deployment
	Image      string
	// Version is parsed from the image tag; VersionErr says why it could not be.
	Version    knowledge.Version
	VersionErr error
	Args       []string
	Gates      knowledge.FeatureGates
	// ExpectationTimeout is --expectation-timeout (default 5m).
	ExpectationTimeout time.Duration
	LeaseNamespace     string
	LeaseName          string
	// ScalingExcludePreparingDelete is --cloneset-scaling-exclude-preparing-delete: every
	// CloneSet counts pods in PreparingDelete as gone when it scales.
	ScalingExcludePreparingDelete bool
}

// FindManager returns the kruise-manager: the Deployment namespace/name when it exists, else the
// first Deployment running the kruise-manager image (installs that renamed it).
func FindManager(deps []*appsv1.Deployment, namespace, name string) *Manager {
	var found *appsv1.Deployment
	for _, d := range deps {
		if d.Namespace == namespace && d.Name == name {
			found = d
			break
		}
	}
	if found == nil {
		for _, d := range deps {
			for _, c := range d.Spec.Template.Spec.Containers {
				if knowledge.ImageRepository(c.Image) == ManagerImageRepository {
					found = d
				}
			}
			if found != nil {
				break
			}
		}
	}
	if found == nil {
		return nil
	}
	m := &Manager{Deployment: found, ExpectationTimeout: 5 * time.Minute}
	for _, c := range found.Spec.Template.Spec.Containers {
		if c.Name == ManagerContainer || knowledge.ImageRepository(c.Image) == ManagerImageRepository {
			m.Image = c.Image
			m.Args = append(append([]string(nil), c.Command...), c.Args...)
			break
		}
	}
	m.Version, m.VersionErr = knowledge.ImageVersion(m.Image)
	m.Gates = knowledge.ParseFeatureGates(m.Args)
	m.ExpectationTimeout = knowledge.FlagDuration(m.Args, "expectation-timeout", m.ExpectationTimeout)
	m.LeaseNamespace, m.LeaseName = LeaderLease(found.Namespace, m.Args)
	m.ScalingExcludePreparingDelete = boolFlag(m.Args, "cloneset-scaling-exclude-preparing-delete")
	return m
}

// boolFlag reads a Go boolean flag: "--name" or "-name" alone is true, "--name=v" is v; the last
// one given wins, and a value that does not parse leaves the flag false (the manager would not
// have started).
func boolFlag(args []string, name string) bool {
	on := false
	for _, a := range args {
		for _, p := range []string{"--" + name, "-" + name} {
			switch {
			case a == p:
				on = true
			case strings.HasPrefix(a, p+"="):
				v, err := strconv.ParseBool(strings.TrimPrefix(a, p+"="))
				on = err == nil && v
			}
		}
	}
	return on
}
