package checks

import "testing"

func TestDiagnoseFirstRuleThatHolds(t *testing.T) {
	var ran []string
	rule := func(id string, holds bool) Rule[*int, string] {
		return func(p *int, s string) (Draft, bool) {
			ran = append(ran, id)
			*p++
			return Draft{RootCause: id, Summary: s}, holds
		}
	}
	rules := []Rule[*int, string]{rule("a", false), rule("b", true), rule("c", true)}
	n := 0
	d, ok := Diagnose(rules, &n, "pod")
	if !ok || d.RootCause != "b" || d.Summary != "pod" {
		t.Fatalf("Diagnose = %+v, %v; want rule b's draft", d, ok)
	}
	if n != 2 || len(ran) != 2 {
		t.Fatalf("rules after the first that holds ran: %v", ran)
	}
	if _, ok := Diagnose(rules[:1], &n, "pod"); ok {
		t.Fatal("no rule holds, yet Diagnose found one")
	}
}
