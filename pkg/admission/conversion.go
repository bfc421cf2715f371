package admission

import (
	"regexp"
	"strings"
)

// ConversionFailure is a failed call of a CRD's conversion webhook, as an error quotes it.
type ConversionFailure struct {
	// Group, Version and Kind are those of the object the apiserver was converting: the version
	// it is stored at.
	Group, Version, Kind string
	// Message is the error from "conversion webhook for" on.
	Message string
}

// conversionFailed is the apiextensions-apiserver's error for a failed conversion call
// (pkg/apiserver/conversion/webhook_converter.go, webhookConverter.Convert: "conversion webhook
// for %v failed: %v" with the object's GroupVersionKind, which prints as `GROUP/VERSION, Kind=KIND`).
var conversionFailed = regexp.MustCompile(`conversion webhook for ([a-z0-9][-a-z0-9.]*)/([a-z0-9]+), Kind=([A-Za-z0-9]+) failed`)

// ConversionFailures finds the failed conversion calls a message quotes, such as the
// namespace controller's NamespaceDeletionContentFailure, which joins several errors with ", ":
// each quote runs to the next failure or the end.
func ConversionFailures(msg string) []ConversionFailure {
	idx := conversionFailed.FindAllStringSubmatchIndex(msg, -1)
	out := make([]ConversionFailure, 0, len(idx))
	for i, m := range idx {
		end := len(msg)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		out = append(out, ConversionFailure{Group: msg[m[2]:m[3]], Version: msg[m[4]:m[5]], Kind: msg[m[6]:m[7]],
			Message: strings.TrimRight(msg[m[0]:end], ", ")})
	}
	return out
}

// Reason words why a call failed, from the error a failure quotes.
func (f ConversionFailure) Reason() string { return failureReason(f.Message) }

// NamesGroupVersion says whether msg names the group/version gv on its own:
// metrics.k8s.io/v1beta1 is not custom.metrics.k8s.io/v1beta1.
func NamesGroupVersion(msg, gv string) bool {
	return regexp.MustCompile(`(^|[^\w.-])` + regexp.QuoteMeta(gv) + `($|[^\w.-])`).MatchString(msg)
}
