package fix

import (
	"context"
	"errors"
	"io"
	"net/url"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

func TestSettleLostAnswers(t *testing.T) {
	ref := report.ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: "web-0", UID: "u1"}
	// How client-go reports a connection dropped after the request was sent.
	lost := &url.Error{Op: "Patch", URL: "http://127.0.0.1/api/v1/namespaces/shop/pods/web-0", Err: io.EOF}
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "web-0", errors.New("rv"))
	for _, tc := range []struct {
		name      string
		err       error
		reads     []landing // what each read-back shows
		resendErr error
		canResend bool
		status    Status
		sends     int
		lost      bool
		reason    string
	}{
		{"answered failure is not read back", conflict, nil, nil, true, StatusRefused, 0, false, "409 Conflict"},
		{"lost, landed", lost, []landing{landed}, nil, true, StatusApplied, 0, true, "the answer to the patch was lost"},
		{"lost, not landed, sent once more", lost, []landing{notLanded, landed}, nil, true, StatusApplied, 1, true, "sent once more"},
		{"lost twice: never a third send", lost, []landing{notLanded, notLanded}, io.ErrUnexpectedEOF, true, StatusFailed, 1, true, "not sent again"},
		{"lost, not landed, unguarded write", lost, []landing{notLanded}, nil, false, StatusFailed, 0, true, "not sent again"},
		{"lost, the object moved", lost, []landing{moved}, nil, true, StatusRefused, 0, true, "not sent again"},
		{"lost, the resend refused", lost, []landing{notLanded}, conflict, true, StatusRefused, 1, true, "sent once more: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reads, sends := 0, 0
			rb := func(context.Context) (landing, string, string, error) {
				l := tc.reads[reads]
				reads++
				return l, "9", "state " + string(rune('a'+reads)), nil
			}
			var resend func(context.Context) error
			if tc.canResend {
				resend = func(context.Context) error { sends++; return tc.resendErr }
			}
			o := settle(t.Context(), &Env{DryRun: DryRunNone}, "patch", ref, "8", tc.err, rb, resend)
			if o.Status != tc.status || sends != tc.sends || o.AnswerLost != tc.lost || !strings.Contains(o.Reason, tc.reason) {
				t.Errorf("status %s, %d sends, answerLost %v, reason %q; want %s, %d, %v, containing %q",
					o.Status, sends, o.AnswerLost, o.Reason, tc.status, tc.sends, tc.lost, tc.reason)
			}
			if reads != len(tc.reads) {
				t.Errorf("%d read-backs, want %d", reads, len(tc.reads))
			}
			if o.Wrote != (tc.status == StatusApplied) || o.ResourceVersionBefore != "8" {
				t.Errorf("wrote %v, resourceVersionBefore %q", o.Wrote, o.ResourceVersionBefore)
			}
		})
	}
}
