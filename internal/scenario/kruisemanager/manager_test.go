package kruisemanager

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// The leader's log lines must be the ones the plugin's parser reads from a real kruise-manager.
func TestManagerLogParsesAsKruiseLog(t *testing.T) {
	l := &managerLog{path: filepath.Join(t.TempDir(), "manager.log")}
	if err := l.reset(); err != nil {
		t.Fatal(err)
	}
	e := newScaleExpectations()
	e.expect("shop/checkout", "create", "checkout-c4njn")
	ok, _, dirty := e.satisfied("shop/checkout")
	if ok {
		t.Fatal("an expected creation is satisfied")
	}
	l.info("cloneset_controller.go:235", `"Not satisfied scale" cloneSet=%q scaleDirtyPods=%s`, "shop/checkout", dirty)
	l.info("cloneset_controller.go:232", `"Expectation unsatisfied overtime" cloneSet=%q scaleDirtyPods=%s overTime=%q`,
		"shop/checkout", dirty, (30*time.Second + 366775*time.Nanosecond).String())
	data, err := os.ReadFile(l.path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 {
		t.Fatalf("log has %d lines, want 2:\n%s", len(lines), data)
	}
	var kinds []kruise.LogKind
	for _, line := range lines {
		// The CRI prefix the container runtime writes; pods/log serves what follows it.
		_, msg, ok := strings.Cut(line, " stderr F ")
		if !ok {
			t.Fatalf("line %q is not in CRI format", line)
		}
		got, ok := kruise.ParseExpectationLog(msg, time.Now())
		if !ok {
			t.Fatalf("the plugin does not parse %q", msg)
		}
		if got.WorkloadKind != kruise.KindCloneSet || got.Namespace != "shop" || got.Name != "checkout" ||
			!reflect.DeepEqual(got.DirtyPods, map[string][]string{"create": {"checkout-c4njn"}}) {
			t.Errorf("parsed %q as %+v", msg, got)
		}
		kinds = append(kinds, got.Kind)
	}
	if kinds[0].Overtime() || !kinds[1].Overtime() || !kinds[1].Scale() {
		t.Errorf("kinds %v: want a not-satisfied line, then a scale overtime line", kinds)
	}
}

func TestScaleExpectations(t *testing.T) {
	e := newScaleExpectations()
	if ok, _, _ := e.satisfied("ns/a"); !ok {
		t.Fatal("nothing expected, yet unsatisfied")
	}
	e.expect("ns/a", "create", "a-1")
	e.expect("ns/a", "delete", "a-0")
	e.observe("ns/a", "create", "a-1")
	if ok, _, dirty := e.satisfied("ns/a"); ok || dirty != `{"delete":["a-0"]}` {
		t.Fatalf("after observing the creation: satisfied %v, dirty %s; want the deletion pending", ok, dirty)
	}
	e.observe("ns/a", "delete", "a-0")
	if ok, _, _ := e.satisfied("ns/a"); !ok {
		t.Fatal("every expectation observed, yet unsatisfied")
	}
	// An event about a pod nobody waits for changes nothing.
	e.observe("ns/b", "create", "b-1")
	if ok, _, _ := e.satisfied("ns/b"); !ok {
		t.Fatal("an unexpected observation made the key unsatisfied")
	}
}

func TestAllHooked(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"ready": "true"}, Finalizers: []string{"x/reg"}}}
	for _, tc := range []struct {
		name string
		hook *kruise.LifecycleHook
		want bool
	}{
		{"no hook", nil, true},
		{"finalizer and label present", &kruise.LifecycleHook{FinalizersHandler: []string{"x/reg"}, LabelsHandler: map[string]string{"ready": "true"}}, true},
		{"finalizer missing", &kruise.LifecycleHook{FinalizersHandler: []string{"x/other"}}, false},
		{"label with another value", &kruise.LifecycleHook{LabelsHandler: map[string]string{"ready": "false"}}, false},
		{"label missing", &kruise.LifecycleHook{LabelsHandler: map[string]string{"warm": "true"}}, false},
	} {
		if got := allHooked(tc.hook, pod); got != tc.want {
			t.Errorf("%s: allHooked = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// With CloneSetEventHandlerOptimization, kruise v1.7.0 ignores a pod update that only adds a
// preNormal hook finalizer, and reacts to readiness and preDelete finalizer changes.
func TestIgnorePodUpdate(t *testing.T) {
	w := &kruise.Workload{Lifecycle: kruise.Lifecycle{
		PreNormal: &kruise.LifecycleHook{FinalizersHandler: []string{"x/registered"}},
		PreDelete: &kruise.LifecycleHook{FinalizersHandler: []string{"x/drain"}},
	}}
	ready := func(s corev1.ConditionStatus) []corev1.PodCondition {
		return []corev1.PodCondition{{Type: corev1.PodReady, Status: s}}
	}
	base := &corev1.Pod{Status: corev1.PodStatus{Conditions: ready(corev1.ConditionTrue)}}
	with := func(f func(p *corev1.Pod)) *corev1.Pod {
		p := base.DeepCopy()
		f(p)
		return p
	}
	for _, tc := range []struct {
		name string
		cur  *corev1.Pod
		want bool
	}{
		{"preNormal hook finalizer added (openkruise/kruise#2057)", with(func(p *corev1.Pod) { p.Finalizers = []string{"x/registered"} }), true},
		{"status change without readiness change", with(func(p *corev1.Pod) { p.Status.PodIP = "10.0.0.9" }), true},
		{"preDelete hook finalizer added", with(func(p *corev1.Pod) { p.Finalizers = []string{"x/drain"} }), false},
		{"readiness changed", with(func(p *corev1.Pod) { p.Status.Conditions = ready(corev1.ConditionFalse) }), false},
		{"spec changed (generation)", with(func(p *corev1.Pod) { p.Generation = 2 }), false},
	} {
		if got := ignorePodUpdate(w, base, tc.cur); got != tc.want {
			t.Errorf("%s: ignored = %v, want %v", tc.name, got, tc.want)
		}
	}
}
