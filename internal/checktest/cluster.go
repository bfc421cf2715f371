package checktest

import (
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// Cluster is what a test case puts in the cluster; Snapshot turns it into the indexed snapshot
// the collector would fill at Now.
type Cluster struct {
	// Pods are listed metadata-only and read in full, as check candidates are.
	Pods []*corev1.Pod
	// MetaOnlyPods are listed metadata-only and not read in full.
	MetaOnlyPods []*corev1.Pod
	Nodes        []*corev1.Node
	NodeLeases   []*coordinationv1.Lease
	// NodesByName, when not nil, are the node names read one by one (why), instead of a list.
	NodesByName map[string]bool
	Leases      []*coordinationv1.Lease
	// LeaseReads are the collector's reads of the leader Leases; when nil, each of Leases was
	// read once, answered at Now by an apiserver whose clock agrees with the scan's.
	LeaseReads map[string][]snapshot.LeaseRead
	Events     []*corev1.Event
	// LeaderLeases are the Leases outside kube-node-lease; LeaseHolders whether an abandoned
	// one's holder pod exists, by "namespace/pod".
	LeaderLeases []*coordinationv1.Lease
	LeaseHolders map[string]bool
	Deployments  []*appsv1.Deployment
	StatefulSets []*appsv1.StatefulSet
	DaemonSets   []*appsv1.DaemonSet
	// ReplicaSets are those a check declared it reads, whole.
	ReplicaSets []*appsv1.ReplicaSet
	// ControllerNamespaces are the only namespaces whose workloads were listed (the
	// cluster-wide lists refused); nil when all were.
	ControllerNamespaces []string
	// ClusterAPILog is the kept part of the Cluster API controller leader's log.
	ClusterAPILog *snapshot.ControllerLog
	// Limits are parts of inputs left unread on purpose, as coverage notes.
	Limits      map[snapshot.Input]string
	Objects     []snapshot.Object
	Namespaces  []*corev1.Namespace
	APIServices []*unstructured.Unstructured
	Clusters    []*unstructured.Unstructured
	// PersistentVolumes are read whole; list a deleted one in Objects too (PVObject).
	PersistentVolumes []*corev1.PersistentVolume
	// DeletedServices are read whole; list them in Objects too (ServiceObject).
	DeletedServices []*corev1.Service
	// DeletedAttachments are read whole; list them in Objects too (AttachmentObject).
	DeletedAttachments []*storagev1.VolumeAttachment
	Workloads          []*kruise.Workload
	SidecarSets        []*kruise.SidecarSet
	// Admission is the webhook configurations, admission policies and the Services the webhooks call.
	Admission snapshot.Admission
	// ServerVersion is the apiserver's /version gitVersion.
	ServerVersion string
	// Logs are controller pod logs by "namespace/pod".
	Logs map[string]string
	// Unread are the inputs the scan could not read, with why.
	Unread map[snapshot.Input]error
}

// Snapshot builds the indexed snapshot.
func (c Cluster) Snapshot() *snapshot.Snapshot {
	s := &snapshot.Snapshot{Now: Now, ServerVersion: c.ServerVersion, Settings: snapshot.DefaultSettings(),
		Nodes: c.Nodes, NodeLeases: c.NodeLeases, NodesByName: c.NodesByName, Leases: c.Leases, Events: c.Events, Deployments: c.Deployments,
		Objects: c.Objects, Namespaces: c.Namespaces, APIServices: c.APIServices, Clusters: c.Clusters,
		Workloads: c.Workloads, SidecarSets: c.SidecarSets,
		StatefulSets: c.StatefulSets, DaemonSets: c.DaemonSets, ReplicaSets: c.ReplicaSets, ControllerNamespaces: c.ControllerNamespaces,
		ClusterAPILog: c.ClusterAPILog, PersistentVolumes: c.PersistentVolumes, DeletedServices: c.DeletedServices, DeletedAttachments: c.DeletedAttachments,
		Admission: c.Admission, LeaderLeases: c.LeaderLeases, LeaseHolders: c.LeaseHolders,
		Unread: map[snapshot.Input]error{}, Logs: map[string]string{}, Limits: map[snapshot.Input]string{}}
	for in, l := range c.Limits {
		s.Limits[in] = l
	}
	for in, err := range c.Unread {
		s.Unread[in] = err
	}
	for k, v := range c.Logs {
		s.Logs[k] = v
	}
	for _, p := range append(append([]*corev1.Pod{}, c.Pods...), c.MetaOnlyPods...) {
		s.Pods = append(s.Pods, p.ObjectMeta.DeepCopy())
	}
	s.FullPods = c.Pods
	s.LeaseReads = c.LeaseReads
	if s.LeaseReads == nil {
		s.LeaseReads = map[string][]snapshot.LeaseRead{}
		for _, l := range c.Leases {
			s.LeaseReads[l.Namespace+"/"+l.Name] = []snapshot.LeaseRead{{Lease: l, ServerTime: Now}}
		}
	}
	s.Index()
	return s
}
