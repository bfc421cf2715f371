package fix

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// Budget is how many of one workload's serving pods a run may take away at once: the workload's
// own maxUnavailable, resolved to a number the way its controller resolves it.
type Budget struct {
	Workload report.ObjectRef
	// Replicas is the number of pods the workload wants (a DaemonSet's desired scheduled pods).
	Replicas int32
	// MaxUnavailable is the workload's own, as its controller counts it.
	MaxUnavailable int32
	// Source says where MaxUnavailable comes from, for the plan.
	Source string
	// MinReadySeconds is how long a pod is Ready before its controller counts it available.
	MinReadySeconds int32
}

// MinReady is how many Ready pods the workload keeps: replicas - maxUnavailable.
func (b Budget) MinReady() int32 {
	return max(b.Replicas-b.MaxUnavailable, 0)
}

// Workload kinds whose budget this build knows.
const (
	groupApps   = "apps"
	groupKruise = "apps.kruise.io"
	// cloneSetDefaultMaxUnavailable is OpenKruise's DefaultCloneSetMaxUnavailable.
	cloneSetDefaultMaxUnavailable = "20%"
	// deploymentDefault is maxSurge's and maxUnavailable's default in apps/v1 SetDefaults_Deployment.
	deploymentDefault = "25%"
)

// BudgetOf reads a workload's budget from the workload as the apiserver returns it.
func BudgetOf(u *unstructured.Unstructured) (Budget, error) {
	gv, err := schema.ParseGroupVersion(u.GetAPIVersion())
	if err != nil {
		return Budget{}, fmt.Errorf("%s: bad apiVersion %q: %w", u.GetName(), u.GetAPIVersion(), err)
	}
	b := Budget{Workload: report.ObjectRef{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(),
		Name: u.GetName(), UID: string(u.GetUID()), ResourceVersion: u.GetResourceVersion()}}
	replicas, err := nestedInt(u, 1, "spec", "replicas")
	if err != nil {
		return b, err
	}
	b.Replicas = replicas
	minReady := []string{"spec", "minReadySeconds"}
	if gv.Group == groupKruise && u.GetKind() == "StatefulSet" {
		// The Advanced StatefulSet keeps it in its rolling update strategy (kruise v1.9.0
		// apis/apps/v1beta1 RollingUpdateStatefulSetStrategy).
		minReady = []string{"spec", "updateStrategy", "rollingUpdate", "minReadySeconds"}
	}
	if b.MinReadySeconds, err = nestedInt(u, 0, minReady...); err != nil {
		return b, err
	}
	switch {
	case gv.Group == groupApps && u.GetKind() == "Deployment":
		err = b.deployment(u)
	case (gv.Group == groupApps || gv.Group == groupKruise) && u.GetKind() == "StatefulSet":
		err = b.statefulSet(u)
	case (gv.Group == groupApps || gv.Group == groupKruise) && u.GetKind() == "DaemonSet":
		err = b.daemonSet(u)
	case gv.Group == groupKruise && u.GetKind() == "CloneSet":
		err = b.cloneSet(u)
	case gv.Group == groupApps && u.GetKind() == "ReplicaSet", gv.Group == "" && u.GetKind() == "ReplicationController":
		b.MaxUnavailable, b.Source = 1, "one pod at a time: a "+u.GetKind()+" has no update strategy"
	default:
		return b, fmt.Errorf("this build does not know how %s %s counts unavailable pods", u.GetAPIVersion(), u.GetKind())
	}
	return b, err
}

// deployment resolves maxUnavailable as kubernetes pkg/controller/deployment/util ResolveFenceposts
// does: maxSurge rounded up, maxUnavailable rounded down, and 1 unavailable when both are 0.
func (b *Budget) deployment(u *unstructured.Unstructured) error {
	if typ, _, _ := unstructured.NestedString(u.Object, "spec", "strategy", "type"); typ == "Recreate" {
		b.MaxUnavailable, b.Source = 1, "one pod at a time: strategy Recreate states no maxUnavailable"
		return nil
	}
	surge, surgeSrc, err := scaled(u, deploymentDefault, b.Replicas, true, "spec", "strategy", "rollingUpdate", "maxSurge")
	if err != nil {
		return err
	}
	unavail, src, err := scaled(u, deploymentDefault, b.Replicas, false, "spec", "strategy", "rollingUpdate", "maxUnavailable")
	if err != nil {
		return err
	}
	b.MaxUnavailable, b.Source = unavail, "its rolling update strategy ("+src+")"
	if surge == 0 && unavail == 0 {
		b.MaxUnavailable, b.Source = 1, "its rolling update strategy (maxSurge "+surgeSrc+" and maxUnavailable "+src+" are both 0, which the controller treats as maxUnavailable 1)"
	}
	return nil
}

// statefulSet resolves maxUnavailable as kubernetes getStatefulSetMaxUnavailable
// (pkg/controller/statefulset/stateful_set_utils.go) and OpenKruise's rollingUpdateStatefulsetPods
// (pkg/controller/statefulset/stateful_set_control.go) do: default 1, rounded down, at least 1.
func (b *Budget) statefulSet(u *unstructured.Unstructured) error {
	if typ, _, _ := unstructured.NestedString(u.Object, "spec", "updateStrategy", "type"); typ == "OnDelete" {
		b.MaxUnavailable, b.Source = 1, "one pod at a time: update strategy OnDelete states no maxUnavailable"
		return nil
	}
	n, src, err := scaled(u, "1", b.Replicas, false, "spec", "updateStrategy", "rollingUpdate", "maxUnavailable")
	if err != nil {
		return err
	}
	b.MaxUnavailable, b.Source = n, "its update strategy ("+src+")"
	if n < 1 {
		b.MaxUnavailable, b.Source = 1, "its update strategy ("+src+", raised to 1 as the controller does)"
	}
	return nil
}

// daemonSet resolves maxUnavailable of the desired scheduled pods as kubernetes
// pkg/controller/daemon/update.go updatedDesiredNodeCounts (util.UnavailableCount, rounded up) and
// OpenKruise's daemonset_util.go unavailableCount do: default 1, and 1 when maxSurge is 0 too.
func (b *Budget) daemonSet(u *unstructured.Unstructured) error {
	desired, err := nestedInt(u, 0, "status", "desiredNumberScheduled")
	if err != nil {
		return err
	}
	b.Replicas = desired
	if typ, _, _ := unstructured.NestedString(u.Object, "spec", "updateStrategy", "type"); typ == "OnDelete" {
		b.MaxUnavailable, b.Source = 1, "one pod at a time: update strategy OnDelete states no maxUnavailable"
		return nil
	}
	surge, _, err := scaled(u, "0", desired, true, "spec", "updateStrategy", "rollingUpdate", "maxSurge")
	if err != nil {
		return err
	}
	unavail, src, err := scaled(u, "1", desired, true, "spec", "updateStrategy", "rollingUpdate", "maxUnavailable")
	if err != nil {
		return err
	}
	b.MaxUnavailable, b.Source = unavail, "its update strategy ("+src+" of the desired scheduled pods)"
	if surge == 0 && unavail == 0 {
		b.MaxUnavailable, b.Source = 1, "its update strategy (maxSurge and maxUnavailable both 0, which the controller treats as maxUnavailable 1)"
	}
	return nil
}

// cloneSet resolves maxUnavailable as OpenKruise v1.9.0 calculateDiffsWithExpectation
// (pkg/controller/cloneset/sync/cloneset_sync_utils.go) does: default 20%, rounded up unless
// maxSurge is above 0 (a paused CloneSet surges 0).
func (b *Budget) cloneSet(u *unstructured.Unstructured) error {
	surge := int32(0)
	if _, set, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "updateStrategy", "maxSurge"); set {
		n, _, err := scaled(u, "0", b.Replicas, true, "spec", "updateStrategy", "maxSurge")
		if err != nil {
			return err
		}
		if paused, _, _ := unstructured.NestedBool(u.Object, "spec", "updateStrategy", "paused"); !paused {
			surge = n
		}
	}
	n, src, err := scaled(u, cloneSetDefaultMaxUnavailable, b.Replicas, surge == 0, "spec", "updateStrategy", "maxUnavailable")
	if err != nil {
		return err
	}
	b.MaxUnavailable, b.Source = n, "its update strategy ("+src+")"
	return nil
}

// scaled reads an int-or-percent field, falling back to def, and scales it to total with the
// controller's rounding. It also says, for the plan, what was given and how it was rounded.
func scaled(u *unstructured.Unstructured, def string, total int32, roundUp bool, fields ...string) (int32, string, error) {
	v, set, err := intOrString(u, fields...)
	if err != nil {
		return 0, "", err
	}
	what := "maxUnavailable " + v.String()
	if fields[len(fields)-1] == "maxSurge" {
		what = "maxSurge " + v.String()
	}
	if !set {
		v = intstr.Parse(def)
		what = fmt.Sprintf("%s absent: the controller's default %s", fields[len(fields)-1], def)
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(&v, int(total), roundUp)
	if err != nil {
		return 0, "", fmt.Errorf("%s: %w", strings.Join(fields, "."), err)
	}
	if v.Type == intstr.String {
		dir := "down"
		if roundUp {
			dir = "up"
		}
		what += fmt.Sprintf(" of %d, rounded %s", total, dir)
	}
	return int32(n), what, nil
}

// intOrString reads an int-or-string field of an unstructured object.
func intOrString(u *unstructured.Unstructured, fields ...string) (intstr.IntOrString, bool, error) {
	raw, set, _ := unstructured.NestedFieldNoCopy(u.Object, fields...)
	if !set || raw == nil {
		return intstr.IntOrString{}, false, nil
	}
	switch v := raw.(type) {
	case int64:
		return intstr.FromInt32(int32(v)), true, nil
	case float64:
		return intstr.FromInt32(int32(v)), true, nil
	case string:
		return intstr.FromString(v), true, nil
	}
	return intstr.IntOrString{}, false, fmt.Errorf("%s: %v is neither a number nor a percentage", strings.Join(fields, "."), raw)
}

// nestedInt reads a number field, or def when it is absent.
func nestedInt(u *unstructured.Unstructured, def int32, fields ...string) (int32, error) {
	raw, set, _ := unstructured.NestedFieldNoCopy(u.Object, fields...)
	if !set || raw == nil {
		return def, nil
	}
	switch v := raw.(type) {
	case int64:
		return int32(v), nil
	case float64:
		return int32(v), nil
	}
	return 0, fmt.Errorf("%s: %v is not a number", strings.Join(fields, "."), raw)
}
