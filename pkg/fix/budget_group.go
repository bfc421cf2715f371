package fix

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Group is the steps of one plan that take serving pods away from one workload. The engine
// applies them in waves within the workload's budget; the plan shows them. A plan's groups are
// what was read when it was prepared: the engine re-reads each wave into a copy of its own.
type Group struct {
	Budget Budget
	// ActionChosen is true when the user chose the action (--action): a workload whose budget
	// allows no pod (a single replica, maxUnavailable 0) is then fixed one pod at a time.
	ActionChosen bool
	// Refusal, when set, is why none of the group's steps may run (no controller, one replica).
	Refusal string
	// Failure, when set, is why the budget could not be read: the steps fail, nothing is evicted blind.
	Failure string
	// PDBs are the PodDisruptionBudgets over the workload's pods when the group was read.
	PDBs  []PDB
	Steps []*Step
}

// WaveSize is how many serving pods one wave may take away.
func (g *Group) WaveSize() int32 {
	if g.ActionChosen && g.Budget.MaxUnavailable < 1 {
		return 1
	}
	return g.Budget.MaxUnavailable
}

// MinReady is how many Ready pods the workload keeps while the group runs.
func (g *Group) MinReady() int32 {
	return max(g.Budget.Replicas-g.WaveSize(), 0)
}

// judge sets the refusal of a workload whose budget allows no pod away, unless the action was chosen.
func (g *Group) judge(action string) {
	b := g.Budget
	g.Refusal = ""
	switch {
	case g.ActionChosen:
	case b.Replicas <= 1:
		g.Refusal = fmt.Sprintf("%s has %d replica: evicting its pod leaves it without a Ready pod until the replacement is Ready; name the action (--action %s) to evict it anyway",
			b.Workload, b.Replicas, action)
	case b.MaxUnavailable < 1:
		g.Refusal = fmt.Sprintf("%s allows no unavailable pod (maxUnavailable 0 from %s); name the action (--action %s) to evict one pod at a time",
			b.Workload, b.Source, action)
	}
}

// takesServingPod reports whether the step's action takes a pod away that may be serving.
func takesServingPod(cat *Catalog, s *Step) bool {
	a, ok := cat.Lookup(s.Action)
	return ok && a.Doc().TakesServingPod
}

// readBudgets reads, for the steps that take serving pods away, each pod's owning workload and
// its budget, and groups the steps by workload in plan order. action is the action the user
// chose (--action), which lifts the refusal of workloads whose budget allows no pod.
func readBudgets(ctx context.Context, c Clients, cat *Catalog, steps []*Step, action string) []*Group {
	r := budgetReader{c: c}
	var groups []*Group
	byWorkload := map[string]*Group{}
	for _, s := range steps {
		if !takesServingPod(cat, s) {
			continue
		}
		pod, err := c.Kube.CoreV1().Pods(s.Target.Namespace).Get(ctx, s.Target.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue // gone: the step reports it already resolved
		}
		if err != nil {
			groups = append(groups, &Group{Budget: Budget{Workload: s.Target}, Failure: "read the pod: " + short(err), Steps: []*Step{s}})
			continue
		}
		g, key := r.group(ctx, pod, s.Action == action, s.Action)
		if prev, ok := byWorkload[key]; ok && key != "" {
			prev.Steps = append(prev.Steps, s)
			continue
		}
		g.Steps = []*Step{s}
		byWorkload[key] = g
		groups = append(groups, g)
	}
	return groups
}

// group reads the budget of the pod's workload. The key names the workload ("" for a pod on its own).
func (r budgetReader) group(ctx context.Context, pod *corev1.Pod, chosen bool, action string) (*Group, string) {
	w, err := r.owner(ctx, pod)
	switch {
	case err != nil:
		return &Group{Budget: Budget{Workload: podRefOf(pod)}, Failure: short(err)}, ""
	case w == nil:
		return &Group{Budget: Budget{Workload: podRefOf(pod)},
			Refusal: "the pod has no controller: nothing would recreate it, so a fix never evicts it"}, ""
	}
	key := string(w.GetUID())
	g := &Group{ActionChosen: chosen}
	if _, _, err := r.read(ctx, g, w, action); err != nil {
		g.Failure = err.Error()
	}
	return g, key
}

// read fills the group's budget and PodDisruptionBudgets from the workload and its pods, and
// judges it. It returns the workload's pods and the apiserver's time they were read at.
func (r budgetReader) read(ctx context.Context, g *Group, w *unstructured.Unstructured, action string) ([]corev1.Pod, time.Time, error) {
	b, err := BudgetOf(w)
	g.Budget = b
	if err != nil {
		g.Refusal = err.Error() + ", so a fix does not evict its pods"
		return nil, time.Time{}, nil
	}
	g.judge(action)
	pods, now, err := r.pods(ctx, w)
	if err != nil {
		return nil, now, err
	}
	g.PDBs, err = r.pdbs(ctx, w.GetNamespace(), pods)
	return pods, now, err
}

// fromUnstructured converts a nested map into a typed object.
func fromUnstructured(m map[string]any, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(m, into)
}
