package main

import (
	"slices"
	"testing"
)

// TestWhyTargets picks the why targets from a scan report: a dead-node pod, a namespace and a
// frozen CloneSet, each with the namespace flag its kind needs.
func TestWhyTargets(t *testing.T) {
	got, err := whyTargets("testdata/why-scan.json")
	if err != nil {
		t.Fatal(err)
	}
	var args [][]string
	for _, g := range got {
		args = append(args, g.args)
	}
	want := [][]string{{"pod/web-1", "-n", "team-0001"}, {"namespace/team-retired"}, {"cloneset/svc-00000", "-n", "team-0000"}}
	if !slices.EqualFunc(args, want, slices.Equal) {
		t.Errorf("targets %v, want %v", args, want)
	}
}
