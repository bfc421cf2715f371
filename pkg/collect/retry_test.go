package collect

import (
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// faultyPods is a cluster of seven pods whose pod list answers the numbered requests with faults.
func faultyPods(t *testing.T, faults map[int]podFault) *fakeCluster {
	t.Helper()
	c := newFakeCluster(t)
	for i := range 7 {
		c.pods.pods = append(c.pods.pods, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: fmt.Sprintf("web-%d", i),
			UID: types.UID(fmt.Sprintf("uid-%d", i)), Labels: map[string]string{"app": "web"}}})
	}
	c.pods.faults = faults
	return c
}

func podNames(s *snapshot.Snapshot) []string {
	var out []string
	for _, p := range s.Pods {
		out = append(out, p.Name)
	}
	return out
}

var sevenPods = []string{"web-0", "web-1", "web-2", "web-3", "web-4", "web-5", "web-6"}

// The pod list rides out each fault and reads every pod exactly once; requests shows the
// continue tokens asked for, in order.
func TestPodListRidesOutFaults(t *testing.T) {
	paged := Options{Scope: snapshot.Scope{AllNamespaces: true}, PageSize: 3}
	for _, tc := range []struct {
		name   string
		opts   Options
		faults map[int]podFault
		// conts are the continue tokens of the requests ("" the first page).
		conts []string
		// abandoned, when not 0, is the index in conts of a pipelined request that the fault
		// abandons: it may be cancelled before it is sent.
		abandoned int
	}{
		{"nothing fails: no extra request", paged, nil, []string{"", "3", "6"}, 0},
		{"nothing fails, unpaged", allNamespaces, nil, []string{""}, 0},
		{"500 on the first page", paged, map[int]podFault{0: {status: 500}}, []string{"", "", "3", "6"}, 0},
		// The second page is cut inside its last pod, after the third page was asked for: that
		// request is dropped, the second page asked for again and its first two pods skipped.
		{"second page cut short", paged, map[int]podFault{1: {cutLast: 3}}, []string{"", "3", "6", "3", "6"}, 2},
		{"first page cut short starts over", paged, map[int]podFault{0: {cutLast: 3}}, []string{"", "3", "", "3", "6"}, 1},
		{"unpaged list cut short starts over", allNamespaces, map[int]podFault{0: {cutLast: 3}}, []string{"", ""}, 0},
		{"429 on a later page", paged, map[int]podFault{2: {status: http.StatusTooManyRequests}}, []string{"", "3", "6", "6"}, 0},
		{"expired continue token starts over", paged, map[int]podFault{1: {status: http.StatusGone}}, []string{"", "3", "", "3", "6"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := faultyPods(t, tc.faults)
			s := collect(t, c, tc.opts, snapshot.InputPods)
			if got := podNames(s); !reflect.DeepEqual(got, sevenPods) || len(s.Unread) != 0 {
				t.Errorf("pods %v, unread %v; want each of the seven once and nothing unread", got, unread(s))
			}
			var conts []string
			for _, r := range c.pods.requests() {
				_, q, _ := strings.Cut(r, "?")
				cont := ""
				for _, kv := range strings.Split(q, "&") {
					if v, ok := strings.CutPrefix(kv, "continue="); ok {
						cont = v
					}
				}
				conts = append(conts, cont)
			}
			if tc.abandoned > 0 && len(conts) == len(tc.conts)-1 {
				conts = slices.Insert(conts, tc.abandoned, tc.conts[tc.abandoned])
			}
			if !reflect.DeepEqual(conts, tc.conts) {
				t.Errorf("continue tokens asked for %q, want %q", conts, tc.conts)
			}
		})
	}
}

func TestPodListGivesUp(t *testing.T) {
	always := map[int]podFault{}
	for i := range 10 {
		always[i] = podFault{status: 500}
	}
	c := faultyPods(t, always)
	s := collect(t, c, allNamespaces, snapshot.InputPods)
	err, _ := s.UnreadInput(snapshot.InputPods)
	if err == nil || !strings.Contains(err.Error(), "tried 5 times") || err.Limit || !err.Blinds() || len(c.pods.requests()) != 5 {
		t.Errorf("unread pods %v after %d requests; want a failure (not a denial) after 5", err, len(c.pods.requests()))
	}

	// A denial is final: one request, and the error says it is a denial.
	c = faultyPods(t, nil)
	c.pods.status = http.StatusForbidden
	s = collect(t, c, allNamespaces, snapshot.InputPods)
	if err, _ := s.UnreadInput(snapshot.InputPods); err == nil || !err.Limit || err.Blinds() || len(c.pods.requests()) != 1 {
		t.Errorf("unread pods %v after %d requests; want a denial after 1", err, len(c.pods.requests()))
	}
}

// A 500 on the cluster-wide Deployments list is retried, never taken for a denial that narrows
// the search to a few namespaces; one that persists is an error, not a narrower read.
func TestControllersListNotNarrowedByAFault(t *testing.T) {
	for _, tc := range []struct {
		name     string
		failures int
		unread   bool
	}{{"once", 1, false}, {"always", 100, true}} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeCluster(t, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "tools", Name: "janitor"}})
			var lists []string
			n := 0
			c.kube.PrependReactor("list", "deployments", func(a clienttesting.Action) (bool, runtime.Object, error) {
				lists = append(lists, a.GetNamespace())
				if n++; n <= tc.failures {
					return true, nil, apierrors.NewInternalError(errors.New("etcd timeout"))
				}
				return false, nil, nil
			})
			s := collect(t, c, allNamespaces, snapshot.InputControllers)
			for _, ns := range lists {
				if ns != "" {
					t.Fatalf("deployments listed in namespace %q: the read was narrowed", ns)
				}
			}
			if _, limited := s.Limits[snapshot.InputControllers]; limited {
				t.Errorf("a fault is noted as a limit: %q", s.Limits[snapshot.InputControllers])
			}
			err, _ := s.UnreadInput(snapshot.InputControllers)
			if tc.unread != (err != nil) || (err != nil && err.Limit) {
				t.Errorf("unread controllers = %v", err)
			}
			if !tc.unread && len(s.Deployments) != 1 {
				t.Errorf("%d deployments read, want 1", len(s.Deployments))
			}
		})
	}
}
