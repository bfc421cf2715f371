package main

import (
	"fmt"
	"slices"
	"strings"
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

// TestWhyBreakdown lists each target's requests by key, the most bytes first, with medians.
func TestWhyBreakdown(t *testing.T) {
	run := func(listBytes int64) sample {
		return sample{reads: apiReads{
			byKey:      map[string]int64{"LIST deployments ": 1, "GET nodes ": 20},
			bytesByKey: map[string]int64{"LIST deployments ": listBytes, "GET nodes ": 60e3},
		}}
	}
	res := []result{{pods: 1000, why: []whyResult{{target: whyTarget{args: []string{"cloneset/a", "-n", "x"}},
		runs: []sample{run(100e3), run(300e3), run(200e3)}}}}}
	var b strings.Builder
	writeWhyBreakdown(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }, res)
	out := b.String()
	list := strings.Index(out, "| 1000 | `why cloneset/a -n x` | LIST deployments | 1 | 200.0 kB |")
	nodes := strings.Index(out, "| 1000 | `why cloneset/a -n x` | GET nodes | 20 | 60.0 kB |")
	if list < 0 || nodes < 0 || list > nodes {
		t.Errorf("breakdown:\n%s", out)
	}
}
