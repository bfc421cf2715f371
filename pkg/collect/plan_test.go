package collect

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func metaPod(ns, name string, labels map[string]string) *metav1.ObjectMeta {
	return &metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "/" + name), Labels: labels}
}

// group returns n pods of one workload in ns, labelled as its controller would.
func group(ns, app string, n int) []*metav1.ObjectMeta {
	var out []*metav1.ObjectMeta
	for i := range n {
		out = append(out, metaPod(ns, fmt.Sprintf("%s-%d", app, i), map[string]string{"app": app, "tier": "web"}))
	}
	return out
}

func TestPlanCandidateReads(t *testing.T) {
	// 40 namespaces of 3 workloads x 10 pods; every pod has tier=web.
	var all []*metav1.ObjectMeta
	for n := range 40 {
		for _, app := range []string{"a", "b", "c"} {
			all = append(all, group(fmt.Sprintf("ns-%02d", n), fmt.Sprintf("%s%02d", app, n), 10)...)
		}
	}
	byName := map[string]*metav1.ObjectMeta{}
	for _, p := range all {
		byName[p.Namespace+"/"+p.Name] = p
	}
	pick := func(names ...string) []*metav1.ObjectMeta {
		var out []*metav1.ObjectMeta
		for _, n := range names {
			out = append(out, byName[n])
		}
		return out
	}
	workload := func(ns, app string) []string {
		var out []string
		for i := range 10 {
			out = append(out, fmt.Sprintf("%s/%s-%d", ns, app, i))
		}
		return out
	}
	tests := []struct {
		name      string
		cands     []*metav1.ObjectMeta
		scoped    bool
		wantLists []string // namespace/key=value
		wantGets  int
	}{
		{name: "one pod: a GET", cands: pick("ns-00/a00-3"), wantGets: 1},
		{name: "scattered pods: GETs, since the labels they share select many other pods",
			cands: pick("ns-00/a00-1", "ns-01/b01-2", "ns-02/c02-3", "ns-02/a02-4"), wantGets: 4},
		{name: "all pods of a workload: one LIST in its namespace",
			cands: pick(workload("ns-05", "b05")...), wantLists: []string{"ns-05/app=b05"}},
		{name: "two workloads and a stray pod",
			cands:     append(append(pick(workload("ns-05", "b05")...), pick(workload("ns-07", "c07")...)...), byName["ns-09/a09-0"]),
			wantLists: []string{"ns-05/app=b05", "ns-07/app=c07"}, wantGets: 1},
		{name: "half of a workload: still one LIST (returns at most twice what it covers)",
			cands: pick(workload("ns-05", "b05")[:5]...), wantLists: []string{"ns-05/app=b05"}},
		{name: "two pods of a workload: GETs (a LIST would return five times as many pods)",
			cands: pick(workload("ns-05", "b05")[:2]...), wantGets: 2},
		{name: "namespace scope: selectors without a namespace",
			cands: pick(workload("ns-05", "b05")...), scoped: true, wantLists: []string{"/app=b05"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scope := all
			if tt.scoped {
				scope = nil
				for _, p := range all {
					if p.Namespace == "ns-05" {
						scope = append(scope, p)
					}
				}
			}
			lists, gets := planCandidateReads(scope, tt.cands, tt.scoped)
			var got []string
			covered := 0
			for _, l := range lists {
				got = append(got, l.namespace+"/"+l.key+"="+l.value)
				covered += l.covers
			}
			sort.Strings(got)
			if !reflect.DeepEqual(got, tt.wantLists) {
				t.Errorf("lists = %v, want %v", got, tt.wantLists)
			}
			if len(gets) != tt.wantGets {
				t.Errorf("%d GETs, want %d", len(gets), tt.wantGets)
			}
			if covered+len(gets) != len(tt.cands) {
				t.Errorf("lists cover %d and GETs read %d of %d candidates", covered, len(gets), len(tt.cands))
			}
		})
	}
}

func TestPlanCandidateReadsScopeWideSelector(t *testing.T) {
	// 200 candidates across namespaces carry a label no other pod has: one LIST over the scope
	// beats 200 GETs even though it scans every pod.
	var all, cands []*metav1.ObjectMeta
	for i := range 5000 {
		labels := map[string]string{"app": fmt.Sprintf("app-%d", i/10)}
		if i%25 == 0 {
			labels["lifecycle"] = "PreparingNormal"
		}
		p := metaPod(fmt.Sprintf("ns-%d", i%50), fmt.Sprintf("p-%d", i), labels)
		all = append(all, p)
		if i%25 == 0 {
			cands = append(cands, p)
		}
	}
	lists, gets := planCandidateReads(all, cands, false)
	if len(lists) != 1 || lists[0].namespace != "" || lists[0].key != "lifecycle" || lists[0].covers != len(cands) || len(gets) != 0 {
		t.Fatalf("lists = %+v, %d GETs; want one scope-wide LIST of lifecycle=PreparingNormal", lists, len(gets))
	}
	if got := lists[0].selector("team=a"); got != "lifecycle=PreparingNormal,team=a" {
		t.Errorf("selector with the scan's own -l = %q", got)
	}
}

func TestPlanCandidateReadsSetSelector(t *testing.T) {
	// Two pods of each of 400 workloads, each pod with its own instance label (as CloneSet pods
	// have): no label pair groups them, one key names them all.
	var all, cands []*metav1.ObjectMeta
	for w := range 400 {
		for i := range 10 {
			p := metaPod(fmt.Sprintf("ns-%d", w%50), fmt.Sprintf("w%d-%d", w, i),
				map[string]string{"app": fmt.Sprintf("w%d", w), "instance": fmt.Sprintf("instance-%03d-%d", w, i)})
			all = append(all, p)
			if i < 2 {
				cands = append(cands, p)
			}
		}
	}
	lists, gets := planCandidateReads(all, cands, false)
	if len(gets) != 0 {
		t.Fatalf("%d GETs, want none", len(gets))
	}
	covered := 0
	for _, l := range lists {
		if l.key != "instance" || l.namespace != "" || l.values == nil {
			t.Fatalf("read %+v, want set selectors on instance over the scope", l)
		}
		if sel := l.selector("team=a"); len(sel) > maxSetSelector+len(",team=a") || !strings.HasPrefix(sel, "instance in (instance-") ||
			!strings.HasSuffix(sel, "),team=a") {
			t.Errorf("selector %q: too long or malformed", sel)
		}
		covered += l.covers
	}
	if covered != len(cands) || len(lists) < 2 {
		t.Errorf("%d set LISTs cover %d of %d candidates; want all, in more than one chunk", len(lists), covered, len(cands))
	}

	// A key whose values many other pods share is not used.
	for i, p := range all {
		if i%10 < 7 {
			p.Labels["zone"] = "a"
		}
	}
	if sets, gets := planSetReads(all, cands); len(gets) != 0 || len(sets) == 0 || slices.ContainsFunc(sets, func(r selectorRead) bool { return r.key != "instance" }) {
		t.Errorf("set plan = %+v / %d GETs, want the instance key only", sets, len(gets))
	}
}
