package resizepolicy

import (
	"fmt"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/internal/kruiseenv"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/knowledge"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// gate is the Kubernetes feature gate that adds containers[].resizePolicy.
const gate = "InPlacePodVerticalScaling"

// pass is what one run of the check knows about the cluster, read once.
type pass struct {
	s *snapshot.Snapshot
	// server is the apiserver's version from /version; serverErr says why it could not be parsed.
	server    knowledge.Version
	serverErr error
	// defaulting is the apiserver range that defaults resizePolicy on pods (v1.27-v1.32).
	defaulting knowledge.Range
	kruiseEnv  *kruiseenv.Env
	mgr        *kruise.Manager
	// mgrOld is true when the manager's version is known and has the drop bug.
	mgrOld bool
	// gate is the InPlacePodVerticalScaling state: "on", "off" or "" (unknown), and why.
	gate, gateWhy string
	hist          *history
}

func newPass(s *snapshot.Snapshot, pods []*podDiff) *pass {
	pa := &pass{s: s, hist: newHistory(s)}
	pa.server, pa.serverErr = knowledge.ParseVersion(s.ServerVersion)
	if b, ok := knowledge.LookupBug(knowledge.BehaviourResizeDefaulting); ok {
		pa.defaulting = b.Affected
	}
	pa.kruiseEnv = kruiseenv.New(s)
	pa.mgr = pa.kruiseEnv.Manager
	_, pa.mgrOld = pa.kruiseEnv.Affected(knowledge.BugKruiseDropsResizePolicy)
	pa.gate, pa.gateWhy = pa.inferGate(pods)
	return pa
}

// serverDefaults reports whether the apiserver's version is one that defaults resizePolicy on
// pods when the gate is on.
func (pa *pass) serverDefaults() bool {
	return pa.serverErr == nil && pa.defaulting.From != "" && pa.defaulting.Contains(pa.server)
}

// serverHasField reports whether pods on this apiserver can carry resizePolicy at all.
func (pa *pass) serverHasField() bool {
	if pa.serverErr != nil || pa.defaulting.From == "" {
		return false
	}
	from, err := knowledge.ParseVersion(pa.defaulting.From)
	return err == nil && pa.server.AtLeast(from)
}

// inferGate infers InPlacePodVerticalScaling from what the pods show; the apiserver's flags are
// not readable. From v1.33 the gate is on by default.
func (pa *pass) inferGate(pods []*podDiff) (string, string) {
	if pa.serverErr != nil {
		return "", ""
	}
	if !pa.serverHasField() {
		return "off", fmt.Sprintf("%s: apiserver %s predates the gate (alpha in %s)", gate, pa.s.ServerVersion, pa.defaulting.From)
	}
	if !pa.serverDefaults() {
		return "on", fmt.Sprintf("%s: on by default from v1.33 (beta, GA in v1.35) on apiserver %s; inferred from the version, the apiserver's flags are not read",
			gate, pa.s.ServerVersion)
	}
	for _, p := range pods {
		for _, c := range p.containers {
			if len(c.podList) > 0 {
				return "on", fmt.Sprintf("%s inferred on for apiserver %s: pod %s container %s carries resizePolicy, which an apiserver with the gate off drops",
					gate, pa.s.ServerVersion, p.pod.Name, c.name)
			}
		}
	}
	for _, p := range pods {
		for _, c := range p.containers {
			if r := requested(c.spec); len(r) > 0 && !c.init {
				return "off", fmt.Sprintf("%s inferred off for apiserver %s: pod %s container %s requests %s but has no resizePolicy, which the apiserver adds when the gate is on",
					gate, pa.s.ServerVersion, p.pod.Name, c.name, joinResources(r))
			}
		}
	}
	return "", ""
}
