package fix

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/fault"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/retry"
)

// Event fields of the record left on a fixed object.
const (
	EventReason    = "WorkloadDoctorFix"
	EventComponent = "kubectl-workloaddoctor"
	// maxEventMessage keeps messages within what events.k8s.io accepts for a note.
	maxEventMessage = 1024
)

// AuditRecord is one line of --audit-file.
type AuditRecord struct {
	Time     time.Time        `json:"time"`
	User     string           `json:"user"`
	Action   string           `json:"action"`
	Object   report.ObjectRef `json:"object"`
	Findings []string         `json:"findings"`
	DryRun   DryRun           `json:"dryRun"`
	// ResourceVersionBefore and After are the object's resourceVersion right before and after the write.
	ResourceVersionBefore string `json:"resourceVersionBefore"`
	ResourceVersionAfter  string `json:"resourceVersionAfter"`
	Result                Status `json:"result"`
	// AnswerLost: the answer to the write was lost, and Result is what reading the object back showed.
	AnswerLost   bool   `json:"answerLost,omitempty"`
	Reason       string `json:"reason,omitempty"`
	Verification string `json:"verification,omitempty"`
}

// record leaves the traces of one attempted action: an Event on the object when it was written,
// and an audit line when --audit-file is set. A failure to record is logged, never fatal: the
// write already happened and its result must still be reported.
func (e *Engine) record(ctx context.Context, s *Step, r *Result, wrote bool) {
	if !wrote && e.o.Audit == nil {
		return
	}
	user := e.whoami(ctx)
	if wrote {
		if err := e.event(ctx, r, user); err != nil {
			e.warnf("could not record an Event on %s: %v", r.Object, err)
		}
	}
	if e.o.Audit == nil {
		return
	}
	obj := r.Object
	obj.ResourceVersion = ""
	line, err := json.Marshal(AuditRecord{
		Time: e.o.Now().UTC(), User: user, Action: r.Action, Object: obj, Findings: r.Findings, DryRun: e.o.DryRun,
		ResourceVersionBefore: r.ResourceVersionBefore, ResourceVersionAfter: r.ResourceVersionAfter,
		Result: r.Status, AnswerLost: r.AnswerLost, Reason: r.Reason, Verification: r.Verification,
	})
	if err == nil {
		_, err = e.o.Audit.Write(append(line, '\n'))
	}
	if err != nil {
		e.warnf("could not write the audit record of %s %s: %v", r.Action, r.Object, err)
	}
}

func (e *Engine) warnf(format string, args ...any) {
	if e.o.OnWarning != nil {
		e.o.OnWarning(fmt.Sprintf(format, args...))
	}
}

// whoami reads the user the API server authenticates us as, once. If it cannot, the records
// say "unknown" and the run goes on.
func (e *Engine) whoami(ctx context.Context) string {
	if e.user != "" {
		return e.user
	}
	e.user = "unknown"
	res, err := e.c.Kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	switch {
	case err != nil:
		e.warnf("could not read the current user for the records (SelfSubjectReview): %v", short(err))
	case res.Status.UserInfo.Username != "":
		e.user = res.Status.UserInfo.Username
	}
	return e.user
}

// event records the action on the object. Cluster-scoped objects get their Event in "default",
// as the apiserver requires for events about them.
func (e *Engine) event(ctx context.Context, r *Result, user string) error {
	ns := r.Object.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	typ := corev1.EventTypeNormal
	if r.Status != StatusApplied {
		typ = corev1.EventTypeWarning
	}
	msg := eventMessage(r, user)
	rv := r.ResourceVersionAfter
	if rv == "" {
		rv = r.ResourceVersionBefore
	}
	now := metav1.NewTime(e.o.Now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: eventNameBase(r.Object.Name), Namespace: ns},
		InvolvedObject: corev1.ObjectReference{
			APIVersion: r.Object.APIVersion, Kind: r.Object.Kind, Namespace: r.Object.Namespace, Name: r.Object.Name,
			UID: types.UID(r.Object.UID), ResourceVersion: rv,
		},
		Reason:              EventReason,
		Message:             msg,
		Type:                typ,
		Source:              corev1.EventSource{Component: EventComponent},
		ReportingController: EventComponent,
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
	}
	events := e.c.Kube.CoreV1().Events(ns)
	_, err := events.Create(ctx, ev, metav1.CreateOptions{})
	if !fault.OutcomeUnknown(err) {
		return err
	}
	// The answer was lost: the Event may exist. It has a generated name, so a blind re-send could
	// leave two records of one write; look for it first, and send once more only if it is not there.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readBackTimeout)
	defer cancel()
	for sent := 1; ; sent++ {
		var found bool
		rerr := retry.Policy{}.Do(ctx, func(ctx context.Context) error {
			var err error
			found, err = eventRecorded(ctx, events, ev)
			return err
		})
		switch {
		case rerr != nil:
			return fmt.Errorf("the answer to the Event create was lost (%v) and the Events could not be read back: %w", err, rerr)
		case found:
			return nil
		case sent == 2:
			return fmt.Errorf("the answer to the Event create was lost twice (%v) and no Event was recorded", err)
		}
		if _, err = events.Create(ctx, ev, metav1.CreateOptions{}); !fault.OutcomeUnknown(err) {
			return err
		}
	}
}

// eventRecorded reports whether an Event like ev (same object, reason, message and time) exists.
func eventRecorded(ctx context.Context, events typedcorev1.EventInterface, ev *corev1.Event) (bool, error) {
	l, err := events.List(ctx, metav1.ListOptions{FieldSelector: fields.AndSelectors(
		fields.OneTermEqualSelector("involvedObject.name", ev.InvolvedObject.Name),
		fields.OneTermEqualSelector("reason", ev.Reason)).String()})
	if err != nil {
		return false, fmt.Errorf("list events: %w", err)
	}
	for _, got := range l.Items {
		if got.InvolvedObject.UID == ev.InvolvedObject.UID && got.Message == ev.Message &&
			got.FirstTimestamp.Unix() == ev.FirstTimestamp.Unix() {
			return true, nil
		}
	}
	return false, nil
}

// eventMessage names the action, the result and who ran it; it only quotes names and finalizers.
func eventMessage(r *Result, user string) string {
	msg := fmt.Sprintf("kubectl-workloaddoctor fix %s %s by %s: %s (findings %s)", r.Action, r.Status, user, r.Reason, strings.Join(r.Findings, ", "))
	if len(msg) > maxEventMessage {
		msg = msg[:maxEventMessage-3] + "..."
	}
	return msg
}

// eventNameBase is the generateName of an Event, "<object>." as kubectl's events are named.
func eventNameBase(name string) string {
	name = strings.ToLower(name)
	if len(name) > 200 {
		name = name[:200]
	}
	return name + "."
}
