package admission

import (
	"strings"
	"testing"
)

// The namespace controller joins its errors with ", " (makeDeleteContentCondition,
// pkg/controller/namespace/deletion/status_condition_utils.go, v1.37.1), and each conversion error
// prints the stored GroupVersionKind (webhook_converter.go, Convert).
func TestConversionFailures(t *testing.T) {
	msg := `Failed to delete all resource types, 2 remaining: failed to read one or more gadgets.example.com from the storage: ` +
		`StorageError: corrupt object, Code: 7, Key: /registry/example.com/gadgets/shop/g1, ResourceVersion: 0, AdditionalErrorMsg: ` +
		`object not decodable revision=236: conversion webhook for example.com/v1beta1, Kind=Gadget failed: ` +
		`Post "https://converter.gadgets.svc:443/convert?timeout=30s": service "converter" not found, ` +
		`Internal error occurred: conversion webhook for backup.example.io/v1alpha1, Kind=Schedule failed: ` +
		`Post "https://127.0.0.1:8443/convert?timeout=30s": dial tcp 127.0.0.1:8443: connect: connection refused`
	got := ConversionFailures(msg)
	if len(got) != 2 {
		t.Fatalf("failures = %+v, want 2", got)
	}
	if g := got[0]; g.Group != "example.com" || g.Version != "v1beta1" || g.Kind != "Gadget" ||
		!strings.Contains(g.Message, `service "converter" not found`) || g.Reason() != "calls fail: its Service converter was not found" {
		t.Errorf("first = %+v (%s)", g, g.Reason())
	}
	if g := got[1]; g.Group != "backup.example.io" || g.Version != "v1alpha1" || g.Kind != "Schedule" ||
		!strings.HasPrefix(g.Message, "conversion webhook for backup.example.io/v1alpha1, Kind=Schedule failed") ||
		g.Reason() != "calls fail: nothing listens behind it (connection refused)" {
		t.Errorf("second = %+v (%s)", g, g.Reason())
	}
	// A webhook that answered with a wrong object is no failure to call it, and other failures
	// are not conversions.
	for _, m := range []string{
		"conversion webhook for example.com/v1beta1, Kind=Gadget returned 0 objects, expected 1",
		"Failed to delete all resource types, 1 remaining: unexpected items still remain in namespace: shop for gvr: /v1, Resource=configmaps",
	} {
		if got := ConversionFailures(m); len(got) != 0 {
			t.Errorf("%q: %+v, want none", m, got)
		}
	}
}
