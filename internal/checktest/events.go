package checktest

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EventOption shapes an event.
type EventOption func(*corev1.Event)

// Event is an event about the involved object, as client-go's recorder writes it: seen once, now.
func Event(involved corev1.ObjectReference, typ, reason, msg string, opts ...EventOption) *corev1.Event {
	e := &corev1.Event{
		InvolvedObject: involved, Type: typ, Reason: reason, Message: msg, Count: 1,
		FirstTimestamp: metav1.NewTime(Now), LastTimestamp: metav1.NewTime(Now),
	}
	for _, o := range opts {
		o(e)
	}
	e.ObjectMeta = metav1.ObjectMeta{Namespace: involved.Namespace, Name: fmt.Sprintf("%s.%x", involved.Name, e.LastTimestamp.UnixNano())}
	return e
}

// From names the component that reported the event.
func From(component string) EventOption {
	return func(e *corev1.Event) { e.Source.Component = component }
}

// Count sets how many times the event was seen.
func Count(n int32) EventOption { return func(e *corev1.Event) { e.Count = n } }

// Seen sets when the event was first and last seen.
func Seen(firstAgo, lastAgo time.Duration) EventOption {
	return func(e *corev1.Event) {
		e.FirstTimestamp, e.LastTimestamp = metav1.NewTime(Ago(firstAgo)), metav1.NewTime(Ago(lastAgo))
	}
}

// RefTo is the reference an event's involvedObject holds for the object.
func RefTo(apiVersion, kind string, m metav1.Object) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: apiVersion, Kind: kind, Namespace: m.GetNamespace(), Name: m.GetName(), UID: m.GetUID()}
}
