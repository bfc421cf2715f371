package terminating

import (
	"fmt"
	"regexp"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// leaderElectionID is how controller-runtime operators scaffolded by kubebuilder name their
// leader-election Lease: a hash, then their API group or the domain it is under
// (LeaderElectionID, "<hash>.<domain>" in cmd/main.go of every kubebuilder project).
var leaderElectionID = regexp.MustCompile(`^[0-9a-f]{8}\.([a-z0-9.-]+)$`)

// operatorLease finds the leader Lease of the operator of an API group: the one whose domain
// is the group or the closest domain the group is under. The finalizer's own domain is tried
// too, since operators name their finalizers after their group.
func (a *pass) operatorLease(group, finalizer string) *coordinationv1.Lease {
	names := []string{group}
	if domain, _, ok := strings.Cut(finalizer, "/"); ok && strings.Contains(domain, ".") {
		names = append(names, domain)
	}
	var best *coordinationv1.Lease
	bestLen := 0
	for _, l := range a.s.LeaderLeases {
		m := leaderElectionID.FindStringSubmatch(l.Name)
		if m == nil {
			continue
		}
		for _, n := range names {
			if n != "" && (n == m[1] || strings.HasSuffix(n, "."+m[1])) && len(m[1]) > bestLen {
				best, bestLen = l, len(m[1])
			}
		}
	}
	return best
}

// operatorFromLease judges the owner of a finalizer nothing else identified from its operator's
// leader Lease. An operator uninstalled before its custom resources leaves its Lease behind: not
// renewed for far longer than its duration (snapshot.LeaseAbandoned), held by a pod that no
// longer exists, in a namespace where no workload is left that could be it scaled down. Only that
// is proof enough that the owner is gone. A Lease renewed recently is an operator that runs.
// It returns false when there is no such Lease or nothing can be concluded from it.
func (a *pass) operatorFromLease(o *finalizerOwner, group string) bool {
	l := a.operatorLease(group, o.Finalizer)
	if l == nil {
		return false
	}
	key := l.Namespace + "/" + l.Name
	holder := snapshot.LeaseHolderPod(l)
	ago, abandoned := snapshot.LeaseAbandoned(l, a.now)
	how := fmt.Sprintf("leader Lease %s (named after API group %s, as controller-runtime names its leader election)", key, group)
	if !abandoned {
		if ago < 0 || l.Spec.RenewTime == nil && l.Spec.AcquireTime == nil {
			return false
		}
		o.State, o.Owner = ownerRunning, "the operator that holds "+how
		o.Where = fmt.Sprintf("renewed %s ago by %s: the operator runs", checks.Age(a.now, a.now.Add(-ago)), holderName(holder))
		return true
	}
	last := fmt.Sprintf("last renewed %s ago by %s", checks.Age(a.now, a.now.Add(-ago)), holderName(holder))
	exists, read := a.s.LeaseHolders[l.Namespace+"/"+holder]
	left := a.workloadsIn(l.Namespace)
	switch {
	case holder == "" || !read:
		o.Where = fmt.Sprintf("its %s was %s; whether that pod exists could not be read", how, last)
	case exists:
		o.Where = fmt.Sprintf("its %s was %s, and that pod still exists", how, last)
	case len(left) > 0:
		o.Where = fmt.Sprintf("its %s was %s, a pod that no longer exists; but %s remains in namespace %s and may be the operator scaled down",
			how, last, left[0], l.Namespace)
	default:
		o.State, o.Owner = ownerMissing, "the operator of "+group
		o.Where = fmt.Sprintf("uninstalled: its %s was %s, a pod that no longer exists, and no Deployment, StatefulSet or DaemonSet is left in namespace %s",
			how, last, l.Namespace)
		if o.Cleanup == "" {
			o.Cleanup = "whatever cleanup that operator does before removing it (unknown to this tool)"
		}
	}
	return o.State == ownerMissing
}

func holderName(pod string) string {
	if pod == "" {
		return "no holder"
	}
	return "pod " + pod
}

// workloadsIn names the Deployments, StatefulSets and DaemonSets listed in the namespace.
func (a *pass) workloadsIn(ns string) []string {
	var out []string
	for _, w := range a.workloads(snapshot.WorkloadQuery{Namespace: ns}) {
		if w.meta.GetNamespace() == ns {
			out = append(out, w.kind+" "+ns+"/"+w.meta.GetName())
		}
	}
	return out
}
