// Package kruiseenv reads what the OpenKruise checks share about the cluster: the kruise-manager
// Deployment and its version and feature gates, its leader Lease and the leader's log.
package kruiseenv

import (
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/knowledge"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// Env is what the OpenKruise checks know about the running kruise-manager, read once per Run.
type Env struct {
	Snapshot *snapshot.Snapshot
	// Manager is the kruise-manager found in the snapshot, nil when none was.
	Manager *kruise.Manager
	// mgrUnknown says why the manager is unknown (Manager == nil).
	mgrUnknown string
	lease      *coordinationv1.Lease
	// holder is the Lease holderIdentity and holderPod the pod it names ("" when unknown).
	holder, holderPod string
	// Logs are the leader's parsed expectation lines; LogsRead is false when no log was read.
	Logs     []kruise.ExpectationLog
	LogsRead bool
	// logText is the kept text of the leader's log.
	logText string
	// LogsUnread says why no log was read.
	LogsUnread string
}

// New reads the manager, its leader and the leader's expectation log lines from the snapshot.
func New(s *snapshot.Snapshot) *Env {
	e := &Env{Snapshot: s}
	ns, name := s.Settings.KruiseNamespace, s.Settings.KruiseDeployment
	if ns == "" || name == "" {
		def := snapshot.DefaultSettings()
		ns, name = def.KruiseNamespace, def.KruiseDeployment
	}
	e.Manager = kruise.FindManager(s.Deployments, ns, name)
	if e.Manager == nil {
		if err, ok := s.Unread[snapshot.InputControllers]; ok {
			e.mgrUnknown = fmt.Sprintf("kruise-manager could not be read (%v)", err)
		} else {
			e.mgrUnknown = fmt.Sprintf("kruise-manager not found: no Deployment %s/%s and none running image %s", ns, name, kruise.ManagerImageRepository)
		}
		e.LogsUnread = "the kruise-manager is unknown"
		return e
	}
	if l, ok := s.Lease(e.Manager.LeaseNamespace, e.Manager.LeaseName); ok {
		e.lease = l
		if l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" {
			e.holder = *l.Spec.HolderIdentity
			e.holderPod = kruise.HolderPod(e.holder)
		}
	}
	switch {
	case e.holderPod == "":
		e.LogsUnread = "no leader holds the Lease " + e.Manager.LeaseNamespace + "/" + e.Manager.LeaseName
		if err, ok := s.Unread[snapshot.InputControllerLogs]; ok {
			e.LogsUnread = err.Error()
		}
	default:
		key := e.Manager.Deployment.Namespace + "/" + e.holderPod
		if text, ok := s.Logs[key]; ok {
			e.LogsRead, e.logText = true, text
			e.Logs = kruise.ParseExpectationLogs(text, s.Now)
		} else if err, ok := s.Unread[snapshot.InputControllerLogs]; ok {
			e.LogsUnread = err.Error()
		} else {
			e.LogsUnread = "the log of " + key + " was not read"
		}
	}
	return e
}

// LogText is the kept text of the leader's log ("" when none was read).
func (e *Env) LogText() string { return e.logText }

// ManagerName renders the manager Deployment for evidence.
func (e *Env) ManagerName() string {
	if e.Manager == nil {
		return "kruise-manager"
	}
	return "Deployment " + e.Manager.Deployment.Namespace + "/" + e.Manager.Deployment.Name
}

// VersionKnown reports whether the manager's version could be read from its image.
func (e *Env) VersionKnown() bool { return e.Manager != nil && e.Manager.VersionErr == nil }

// ManagerEvidence is the line that names the manager, its image and version.
func (e *Env) ManagerEvidence() string {
	switch {
	case e.Manager == nil:
		return e.mgrUnknown + "; version and feature gates unknown"
	case e.Manager.VersionErr != nil:
		return fmt.Sprintf("kruise-manager %s runs image %q whose version is unknown (%v)", e.ManagerName(), e.Manager.Image, e.Manager.VersionErr)
	}
	return fmt.Sprintf("kruise-manager %s runs image %s (%s)", e.ManagerName(), e.Manager.Image, e.Manager.Version)
}

// Affected reports whether the running manager has the known bug; the bug is returned either way.
func (e *Env) Affected(bugID string) (knowledge.Bug, bool) {
	if !e.VersionKnown() {
		b, _ := knowledge.LookupBug(bugID)
		return b, false
	}
	return knowledge.Affected(bugID, e.Manager.Version, e.Manager.Gates)
}

// ExpectationTimeout is the manager's --expectation-timeout (default 5m).
func (e *Env) ExpectationTimeout() time.Duration {
	if e.Manager == nil || e.Manager.ExpectationTimeout <= 0 {
		return 5 * time.Minute
	}
	return e.Manager.ExpectationTimeout
}

// WorkloadRef names a Kruise workload in a finding.
func WorkloadRef(w *kruise.Workload) report.ObjectRef {
	return checks.Ref(w.APIVersion, w.Kind, &w.ObjectMeta)
}
