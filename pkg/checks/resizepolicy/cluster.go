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

// cluster is what the check knows about the cluster, read once per run.
type cluster struct {
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

func newCluster(s *snapshot.Snapshot, pods []*podDiff) *cluster {
	e := &cluster{s: s, hist: newHistory(s)}
	e.server, e.serverErr = knowledge.ParseVersion(s.ServerVersion)
	if b, ok := knowledge.LookupBug(knowledge.BehaviourResizeDefaulting); ok {
		e.defaulting = b.Affected
	}
	e.kruiseEnv = kruiseenv.New(s)
	e.mgr = e.kruiseEnv.Manager
	_, e.mgrOld = e.kruiseEnv.Affected(knowledge.BugKruiseDropsResizePolicy)
	e.gate, e.gateWhy = e.inferGate(pods)
	return e
}

// serverDefaults reports whether the apiserver's version is one that defaults resizePolicy on
// pods when the gate is on.
func (e *cluster) serverDefaults() bool {
	return e.serverErr == nil && e.defaulting.From != "" && e.defaulting.Contains(e.server)
}

// serverHasField reports whether pods on this apiserver can carry resizePolicy at all.
func (e *cluster) serverHasField() bool {
	if e.serverErr != nil || e.defaulting.From == "" {
		return false
	}
	from, err := knowledge.ParseVersion(e.defaulting.From)
	return err == nil && e.server.AtLeast(from)
}

// inferGate infers InPlacePodVerticalScaling from what the pods show; the apiserver's flags are
// not readable. From v1.33 the gate is on by default.
func (e *cluster) inferGate(pods []*podDiff) (string, string) {
	if e.serverErr != nil {
		return "", ""
	}
	if !e.serverHasField() {
		return "off", fmt.Sprintf("%s: apiserver %s predates the gate (alpha in %s)", gate, e.s.ServerVersion, e.defaulting.From)
	}
	if !e.serverDefaults() {
		return "on", fmt.Sprintf("%s: on by default from v1.33 (beta, GA in v1.35) on apiserver %s; inferred from the version, the apiserver's flags are not read",
			gate, e.s.ServerVersion)
	}
	for _, p := range pods {
		for _, c := range p.containers {
			if len(c.podList) > 0 {
				return "on", fmt.Sprintf("%s inferred on for apiserver %s: pod %s container %s carries resizePolicy, which an apiserver with the gate off drops",
					gate, e.s.ServerVersion, p.pod.Name, c.name)
			}
		}
	}
	for _, p := range pods {
		for _, c := range p.containers {
			if r := requested(c.spec); len(r) > 0 && !c.init {
				return "off", fmt.Sprintf("%s inferred off for apiserver %s: pod %s container %s requests %s but has no resizePolicy, which the apiserver adds when the gate is on",
					gate, e.s.ServerVersion, p.pod.Name, c.name, joinResources(r))
			}
		}
	}
	return "", ""
}
