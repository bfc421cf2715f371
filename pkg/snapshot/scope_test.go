package snapshot

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSelectorImplies(t *testing.T) {
	ws := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"},
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"front"}}}}
	for sel, want := range map[string]bool{
		"app=web": true, "app in (web,db)": true, "app!=db": true, "tier=front,app=web": true, "app": true,
		"app=db": false, "team=a": false, "app=web,team=a": false, "!team": false, "tier=back": false,
	} {
		if got := SelectorImplies(ws, sel); got != want {
			t.Errorf("SelectorImplies(app=web,tier in (front); %q) = %v, want %v", sel, got, want)
		}
	}
	if SelectorImplies(nil, "app=web") {
		t.Error("a workload without a selector implies nothing")
	}
}
