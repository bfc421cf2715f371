package main

import "testing"

// The population's shape: each kind's share of the groups, its ordinals without gaps, the
// stalled share of each core kind, and stuck pods only where the checks expect them.
func TestPopulationShape(t *testing.T) {
	const groups = 100 * setsEvery // 80,000 pods
	byKind := map[kind]int{}
	stalled := map[kind]int{}
	for g := range groups {
		gr := newGroup(g)
		if gr.ordinal != byKind[gr.kind] {
			t.Fatalf("group %d: ordinal %d among its kind, want %d", g, gr.ordinal, byKind[gr.kind])
		}
		byKind[gr.kind]++
		if gr.stalled {
			stalled[gr.kind]++
		}
		for k := range groupSize {
			stuck := stuckOf(gr, g*groupSize+k)
			switch {
			case stuck == notStuck:
			case gr.kind == kindCloneSet && stuck == stuckPreparingNormal,
				gr.kind == kindDeployment && (stuck == stuckFinalizer || stuck == stuckDeadNode):
			default:
				t.Errorf("group %d (kind %d) pod %d: stuck %d", g, gr.kind, k, stuck)
			}
		}
	}
	per := groups / setsEvery
	want := map[kind]int{kindCloneSet: groups / cloneSetEvery, kindStatefulSet: per, kindDaemonSet: per,
		kindDeployment: groups - groups/cloneSetEvery - 2*per}
	for k, n := range want {
		if byKind[k] != n {
			t.Errorf("kind %d: %d groups, want %d", k, byKind[k], n)
		}
	}
	if got, want := stalled[kindDeployment], byKind[kindDeployment]/stalledDeploymentEvery; got != want {
		t.Errorf("%d stalled Deployments of %d, want %d", got, byKind[kindDeployment], want)
	}
	for _, k := range []kind{kindStatefulSet, kindDaemonSet} {
		if got, want := stalled[k], byKind[k]/stalledSetEvery; got != want {
			t.Errorf("kind %d: %d stalled of %d, want %d", k, got, byKind[k], want)
		}
	}
	if stalled[kindCloneSet] != 0 {
		t.Errorf("%d stalled CloneSets, want none (their stuck states are the pods')", stalled[kindCloneSet])
	}
}

// A DaemonSet runs on a whole pool of live nodes.
func TestDaemonSetPools(t *testing.T) {
	for ordinal := range 100 {
		pool := poolOf(ordinal)
		first, last := pool*groupSize, pool*groupSize+groupSize-1
		if first < deadNodes || last >= nodes {
			t.Errorf("DaemonSet %d on pool %d: nodes %d-%d, want live nodes %d-%d", ordinal, pool, first, last, deadNodes, nodes-1)
		}
	}
}
