// Package checktest builds the snapshot objects the checks' tests diagnose: pods, nodes, leases,
// Deployments, OpenKruise workloads, metadata-only objects and events, shaped the way the
// apiserver and the controllers write them, and a Cluster that turns them into the snapshot the
// collector would fill. Builders take the few values every caller names and functional options
// for the rest, so a test states only what its case is about.
package checktest

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Now is the moment every snapshot of this package is taken; ages count back from it.
var Now = time.Date(2026, 6, 12, 12, 0, 0, 0, time.UTC)

// Ago is the time d before Now.
func Ago(d time.Duration) time.Time { return Now.Add(-d) }

// MetaAgo is Ago as the API's timestamp type.
func MetaAgo(d time.Duration) *metav1.Time { t := metav1.NewTime(Ago(d)); return &t }

// Option shapes any object's metadata; options for one kind of object (OnNode for pods, Ready
// for nodes, Replicas for workloads) panic when given another, which only a broken test does.
type Option func(metav1.Object)

func apply(m metav1.Object, opts []Option) {
	for _, o := range opts {
		o(m)
	}
}

// CreatedAgo sets the creation timestamp.
func CreatedAgo(d time.Duration) Option {
	return func(m metav1.Object) { m.SetCreationTimestamp(metav1.NewTime(Ago(d))) }
}

// UID replaces the object's UID.
func UID(uid types.UID) Option { return func(m metav1.Object) { m.SetUID(uid) } }

// Labels adds labels.
func Labels(kv map[string]string) Option {
	return func(m metav1.Object) { m.SetLabels(merge(m.GetLabels(), kv)) }
}

// Annotations adds annotations.
func Annotations(kv map[string]string) Option {
	return func(m metav1.Object) { m.SetAnnotations(merge(m.GetAnnotations(), kv)) }
}

func merge(into, kv map[string]string) map[string]string {
	if into == nil {
		into = map[string]string{}
	}
	for k, v := range kv {
		into[k] = v
	}
	return into
}

// OwnedBy makes the named object the controller of this one (ownerReferences replaced).
func OwnedBy(apiVersion, kind, name string, uid types.UID) Option {
	return func(m metav1.Object) {
		yes := true
		m.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid,
			Controller: &yes, BlockOwnerDeletion: &yes}})
	}
}

// Deleted marks the object deleted: the apiserver sets deletionTimestamp to the request time plus
// the grace period, so dueAgo is how long ago the grace period ended.
func Deleted(dueAgo time.Duration, grace int64) Option {
	return func(m metav1.Object) {
		m.SetDeletionTimestamp(MetaAgo(dueAgo))
		m.SetDeletionGracePeriodSeconds(&grace)
	}
}

// DeletedSince sets only the deletionTimestamp, as for namespaces and custom resources.
func DeletedSince(dueAgo time.Duration) Option {
	return func(m metav1.Object) { m.SetDeletionTimestamp(MetaAgo(dueAgo)) }
}

// Finalizers adds finalizers, recorded in managedFields as added by manager 30 minutes ago
// (no entry when manager is empty).
func Finalizers(manager string, fins ...string) Option {
	return func(m metav1.Object) {
		m.SetFinalizers(append(m.GetFinalizers(), fins...))
		if manager != "" {
			m.SetManagedFields(append(m.GetManagedFields(), Managed(manager, "", 30*time.Minute, MetadataFields(fins, nil))))
		}
	}
}

// SetBy is what a third party such as a lifecycle hook controller does to an object: add
// finalizers and set labels, recorded under its own field manager age ago.
func SetBy(manager string, age time.Duration, finalizers []string, labels map[string]string) Option {
	return func(m metav1.Object) {
		m.SetFinalizers(append(m.GetFinalizers(), finalizers...))
		var keys []string
		for k := range labels {
			keys = append(keys, k)
		}
		m.SetLabels(merge(m.GetLabels(), labels))
		m.SetManagedFields(append(m.GetManagedFields(), Managed(manager, "", age, MetadataFields(finalizers, keys))))
	}
}

// ManagedFields adds managedFields entries.
func ManagedFields(entries ...metav1.ManagedFieldsEntry) Option {
	return func(m metav1.Object) { m.SetManagedFields(append(m.GetManagedFields(), entries...)) }
}
