// Package snapshot holds the read-only picture of the cluster that checks run on. The collector
// fills it once per scan; checks query it through its indices and never call the API, so they can
// be unit-tested on objects built in a test.
package snapshot

import (
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// Input names something the collector reads. Checks declare the inputs they need; the collector
// reads each one once per scan, whatever the number of checks that need it.
type Input string

// Inputs the collector knows how to read.
const (
	// InputPods is every pod in scope, metadata only; candidates are then read in full.
	InputPods Input = "pods"
	// InputNodes is every node.
	InputNodes Input = "nodes"
	// InputNodeLeases is the node heartbeat Leases in kube-node-lease.
	InputNodeLeases Input = "node-leases"
	// InputEvents is the events in scope that the checks use (Warning events, and events of OpenKruise workloads).
	InputEvents Input = "events"
	// InputNamespaces is the namespaces in scope.
	InputNamespaces Input = "namespaces"
	// InputAPIServices is the aggregated APIServices.
	InputAPIServices Input = "apiservices"
	// InputObjects is every other listable resource, metadata only, keeping objects being deleted.
	InputObjects Input = "objects"
	// InputKruiseWorkloads is CloneSets, Advanced StatefulSets and Advanced DaemonSets.
	InputKruiseWorkloads Input = "kruise-workloads"
	// InputSidecarSets is OpenKruise SidecarSets.
	InputSidecarSets Input = "sidecarsets"
	// InputControllers is the Deployments and leader Leases of the controllers the checks know
	// (kruise-manager, kwok, finalizer owners).
	InputControllers Input = "controllers"
	// InputControllerLogs is the bounded logs of the kruise-manager leader.
	InputControllerLogs Input = "controller-logs"
	// InputClusterAPILogs is the bounded log of the Cluster API core controller's leader, only
	// the lines of refused finalizer updates kept.
	InputClusterAPILogs Input = "cluster-api-logs"
	// InputControllerRevisions is the ControllerRevisions the checks name once they have seen
	// the workloads and pods, read one by one.
	InputControllerRevisions Input = "controller-revisions"
	// InputReplicaSets is the ReplicaSets of the Deployments a check declared it reads (see
	// Reads), listed by each Deployment's selector in its namespace.
	InputReplicaSets Input = "replica-sets"
	// InputLeaderLeases is every Lease outside kube-node-lease (the leader elections of the
	// cluster's controllers and operators), and whether the holder pod of one long not renewed
	// still exists, read by name.
	InputLeaderLeases Input = "leader-leases"
	// InputClusterAPI is Cluster API Clusters.
	InputClusterAPI Input = "cluster-api"
	// InputPersistentVolumes is every PersistentVolume, whole (their phase and claimRef).
	InputPersistentVolumes Input = "persistent-volumes"
	// InputDeletedServices is the Services being deleted, whole (their load balancer's state).
	InputDeletedServices Input = "deleted-services"
	// InputDeletedAttachments is the VolumeAttachments being deleted, whole (their detach error).
	InputDeletedAttachments Input = "deleted-volume-attachments"
	// InputAdmission is the validating and mutating webhook configurations and the
	// ValidatingAdmissionPolicies with their bindings, whole, then the CRDs whose conversion
	// webhook a namespace being deleted quotes as failing, the Services the webhooks, those
	// conversion webhooks and unavailable APIServices call, and those Services' EndpointSlices,
	// read by name (see Admission).
	InputAdmission Input = "admission"
)

// ControllerLog is the part of a controller's log a scan read: the window it asked for and the
// lines it kept, each prefixed by the kubelet's RFC 3339 timestamp.
type ControllerLog struct {
	Namespace, Pod, Container string
	Since                     time.Duration
	LimitBytes                int64
	Lines                     []string
}

// Scope is what the user asked to scan.
type Scope struct {
	// Namespace is the namespace scanned; empty with AllNamespaces.
	Namespace     string
	AllNamespaces bool
	// LabelSelector narrows the pods and workloads read.
	LabelSelector string
	// ClusterResources are the cluster-scoped resources a one-namespace scope reads as well, as
	// a scan of every namespace reads them, and the events about their objects (recorded in
	// default). `why` diagnoses a cluster-scoped object on its resource plus the one namespace
	// its chain reaches (a volume's claim, a definition's instances), never the whole cluster.
	ClusterResources []schema.GroupResource
	// MinAgeSet is true when --min-age replaced the checks' own thresholds, so a check whose
	// default comes from the cluster (a controller's timeout) knows the value was asked for.
	MinAgeSet bool
}

// Settings are where the checks look for the controllers they diagnose.
type Settings struct {
	KruiseNamespace  string
	KruiseDeployment string
}

// DefaultSettings are the Helm chart defaults.
func DefaultSettings() Settings {
	return Settings{KruiseNamespace: "kruise-system", KruiseDeployment: "kruise-controller-manager"}
}

// Object is the metadata of an object of any resource, as a metadata-only list returns it.
type Object struct {
	Resource   schema.GroupVersionResource
	Kind       string
	Namespaced bool
	Meta       *metav1.PartialObjectMetadata
}

// APIVersion returns the object's group/version.
func (o Object) APIVersion() string {
	return schema.GroupVersion{Group: o.Resource.Group, Version: o.Resource.Version}.String()
}

// LeaseRead is one read of a leader Lease.
type LeaseRead struct {
	Lease *coordinationv1.Lease
	// ServerTime is the apiserver's clock when it answered (its Date header, to the second);
	// zero when the answer carried none.
	ServerTime time.Time
	// Elapsed is the local monotonic time from the scan's start to the answer: it measures the
	// time between two reads, never a timestamp of the cluster.
	Elapsed time.Duration
}

// Admission is what a scan read of admission control (InputAdmission).
type Admission struct {
	// ValidatingWebhooks and MutatingWebhooks are every webhook configuration, without managedFields.
	ValidatingWebhooks []*admissionregistrationv1.ValidatingWebhookConfiguration
	MutatingWebhooks   []*admissionregistrationv1.MutatingWebhookConfiguration
	// Policies and PolicyBindings are every ValidatingAdmissionPolicy and binding (v1), when
	// PoliciesServed: clusters before v1.30 do not serve them, which is not an error.
	Policies       []*admissionregistrationv1.ValidatingAdmissionPolicy
	PolicyBindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	PoliciesServed bool
	// ConversionCRDs are the CustomResourceDefinitions whose conversion webhook the
	// NamespaceDeletionContentFailure of a namespace being deleted quotes as failing, read by
	// name, whole.
	ConversionCRDs []*unstructured.Unstructured
	// Services are the Services the apiserver calls, by "namespace/name": the webhooks'
	// (clientConfig.service), the ConversionCRDs' conversion webhooks', and those of the
	// APIServices not Available or named by a namespace's NamespaceDeletionDiscoveryFailure. Only
	// those read whole, Service and EndpointSlices; one whose read failed is absent, and the
	// failure is in Unread[InputAdmission].
	Services map[string]*BackendService
}

// BackendService is a Service that the apiserver calls (a webhook's, a conversion webhook's,
// an APIService's), as a scan read it.
type BackendService struct {
	Namespace, Name string
	// Service is nil when no such Service exists.
	Service *corev1.Service
	// EndpointSlices are the slices labelled kubernetes.io/service-name with the Service's name
	// in its namespace, without managedFields; none when the Service does not exist.
	EndpointSlices []*discoveryv1.EndpointSlice
}

// Snapshot is the collected cluster state. Fill the exported fields, then call Index.
type Snapshot struct {
	// Now is the apiserver's clock when the lists were read (the local clock when the answers
	// carried no Date, or it agreed with them to within their precision): every age is
	// measured against it.
	Now time.Time
	// ClockOffset is how far the apiserver's clock is ahead of the local one (negative: behind),
	// zero when they agree to within the Date header's precision.
	ClockOffset   time.Duration
	ServerVersion string
	Scope         Scope
	Settings      Settings

	// Pods is the metadata of every pod in scope, as a metadata-only list returns it but without
	// managedFields and with only the annotations some check reads from it; FullPods have them
	// all. Pods may share label maps and ownerReferences slices with each other: like everything
	// in a snapshot, they are read-only. Metadata rather than whole (mostly empty) Pod objects
	// keeps a snapshot of 100k pods small.
	Pods []*metav1.ObjectMeta
	// FullPods holds the complete objects of the candidate pods, except that the field sets of
	// their managedFields keep only metadata fields (who wrote the spec or status is not kept).
	FullPods []*corev1.Pod
	// Nodes and NodeLeases are every node and heartbeat Lease, or, when NodesByName is not nil,
	// only those of the names it holds (read one by one, as `why` does).
	Nodes      []*corev1.Node
	NodeLeases []*coordinationv1.Lease
	// NodesByName are the node names read by name, found or not; nil when nodes were listed.
	// A node that is not in Nodes is known to be gone only if nodes were listed or its name
	// was read (NodeAbsent).
	NodesByName map[string]bool
	Leases      []*coordinationv1.Lease
	// LeaseReads are the reads of the controllers' leader Leases by "namespace/name", oldest
	// first: one with the controllers, one at the end of the scan. A leader's liveness is judged
	// from them, never from the local clock against the Lease's timestamps.
	LeaseReads  map[string][]LeaseRead
	Events      []*corev1.Event // without managedFields
	Namespaces  []*corev1.Namespace
	APIServices []*unstructured.Unstructured
	Deployments []*appsv1.Deployment
	// StatefulSets and DaemonSets are read with the Deployments: controllers run as any of them.
	StatefulSets []*appsv1.StatefulSet
	DaemonSets   []*appsv1.DaemonSet
	// ControllerNamespaces are the only namespaces whose Deployments, StatefulSets and DaemonSets
	// were listed, when the cluster-wide lists were refused; nil when every namespace was listed.
	ControllerNamespaces []string
	// ControllersNear says the Deployments, StatefulSets and DaemonSets were listed only in the
	// namespaces a one-namespace scope needs them from (its own and the controllers' configured
	// ones), and in other namespaces only those a check searched for (AskWorkloads), which the
	// collector reads before the checks run for the report.
	ControllersNear bool
	// workloadsHeld are the searches whose every match in every namespace is held; workloadsAsked
	// those a check made since the collector last looked (AskedWorkloads).
	workloadsHeld  map[WorkloadQuery]bool
	workloadsAsked []WorkloadQuery
	// ControllerPods are the pods of the controllers' Deployments (to find leaders).
	ControllerPods []*corev1.Pod
	Workloads      []*kruise.Workload
	// Revisions are the ControllerRevisions of OpenKruise workloads that a check declared it reads
	// (see Reads), read by name; one read metadata-only has no Data.
	Revisions   []*appsv1.ControllerRevision
	SidecarSets []*kruise.SidecarSet
	// LeaderLeases are every Lease outside kube-node-lease. LeaseHolders says, by
	// "namespace/pod", whether the holder pod of a Lease abandoned (LeaseAbandoned) exists.
	LeaderLeases []*coordinationv1.Lease
	LeaseHolders map[string]bool
	// ReplicaSets are the ReplicaSets a check declared it reads (see Reads): whole, or, when
	// many were declared, metadata only (no spec, no status).
	ReplicaSets []*appsv1.ReplicaSet
	// Objects are objects of other resources that are being deleted.
	Objects  []Object
	Clusters []*unstructured.Unstructured
	// PersistentVolumes are every PV, whole; nil in a scan of one namespace.
	PersistentVolumes []*corev1.PersistentVolume
	// DeletedServices are the Services in scope being deleted, whole.
	DeletedServices []*corev1.Service
	// DeletedAttachments are the VolumeAttachments being deleted, whole; nil in a scan of one namespace.
	DeletedAttachments []*storagev1.VolumeAttachment
	// Admission is the admission control read, whatever the scope: webhooks are cluster-wide.
	Admission Admission
	// Logs maps "namespace/pod" of a controller leader to the bounded text read from its log.
	Logs map[string]string
	// ClusterAPILog is what was read of the Cluster API controller leader's log; nil if not read.
	ClusterAPILog *ControllerLog
	// Installed records which optional APIs discovery found ("apps.kruise.io", "cluster.x-k8s.io").
	Installed map[string]bool
	// Unread records inputs (or parts of them) that could not be read, and why: the collector
	// records each once as an *UnreadError, which says whether it is a stated limit (UnreadInput).
	Unread map[Input]error
	// Limits records parts of inputs left unread on purpose (e.g. Secrets without list rights);
	// they are reported as coverage notes and do not make coverage incomplete.
	Limits map[Input]string

	podByUID      map[types.UID]*metav1.ObjectMeta
	fullPodByUID  map[types.UID]*corev1.Pod
	podsByOwner   map[types.UID][]*metav1.ObjectMeta
	podsByNode    map[string][]*corev1.Pod
	nodeByName    map[string]*corev1.Node
	nodeLease     map[string]*coordinationv1.Lease
	eventsByUID   map[types.UID][]*corev1.Event
	eventsByName  map[string][]*corev1.Event
	workloadByUID map[types.UID]*kruise.Workload
	rsByOwner     map[types.UID][]*appsv1.ReplicaSet
	namespaceByNm map[string]*corev1.Namespace
}

// Index builds the lookup tables. Call it after the fields are filled and before checks run.
func (s *Snapshot) Index() {
	if s.Now.IsZero() {
		s.Now = time.Now()
	}
	s.podByUID = make(map[types.UID]*metav1.ObjectMeta, len(s.Pods))
	s.fullPodByUID = make(map[types.UID]*corev1.Pod, len(s.FullPods))
	s.podsByOwner = map[types.UID][]*metav1.ObjectMeta{}
	s.podsByNode = map[string][]*corev1.Pod{}
	for _, p := range s.FullPods {
		s.fullPodByUID[p.UID] = p
	}
	index := func(m *metav1.ObjectMeta) {
		// A pod read in full is looked up with all of its metadata.
		if full, ok := s.fullPodByUID[m.UID]; ok {
			m = &full.ObjectMeta
		}
		s.podByUID[m.UID] = m
		for _, ref := range m.OwnerReferences {
			s.podsByOwner[ref.UID] = append(s.podsByOwner[ref.UID], m)
		}
	}
	for _, m := range s.Pods {
		index(m)
	}
	// Full pods not listed in Pods (a label-selected read, or a test) still count.
	for _, p := range s.FullPods {
		if _, ok := s.podByUID[p.UID]; !ok {
			index(&p.ObjectMeta)
		}
	}
	for _, p := range s.fullPodByUID {
		if p.Spec.NodeName != "" {
			s.podsByNode[p.Spec.NodeName] = append(s.podsByNode[p.Spec.NodeName], p)
		}
	}
	s.nodeByName = make(map[string]*corev1.Node, len(s.Nodes))
	for _, n := range s.Nodes {
		s.nodeByName[n.Name] = n
	}
	s.nodeLease = make(map[string]*coordinationv1.Lease, len(s.NodeLeases))
	for _, l := range s.NodeLeases {
		s.nodeLease[l.Name] = l
	}
	s.eventsByUID = map[types.UID][]*corev1.Event{}
	s.eventsByName = map[string][]*corev1.Event{}
	for _, e := range s.Events {
		if e.InvolvedObject.UID != "" {
			s.eventsByUID[e.InvolvedObject.UID] = append(s.eventsByUID[e.InvolvedObject.UID], e)
		}
		k := eventKey(e.InvolvedObject.Kind, e.InvolvedObject.Namespace, e.InvolvedObject.Name)
		s.eventsByName[k] = append(s.eventsByName[k], e)
	}
	s.workloadByUID = make(map[types.UID]*kruise.Workload, len(s.Workloads))
	for _, w := range s.Workloads {
		s.workloadByUID[w.UID] = w
	}
	s.rsByOwner = map[types.UID][]*appsv1.ReplicaSet{}
	for _, rs := range s.ReplicaSets {
		if ref := ControllerOf(rs); ref != nil {
			s.rsByOwner[ref.UID] = append(s.rsByOwner[ref.UID], rs)
		}
	}
	s.namespaceByNm = make(map[string]*corev1.Namespace, len(s.Namespaces))
	for _, n := range s.Namespaces {
		s.namespaceByNm[n.Name] = n
	}
	if s.Unread == nil {
		s.Unread = map[Input]error{}
	}
	if s.Limits == nil {
		s.Limits = map[Input]string{}
	}
	if s.Installed == nil {
		s.Installed = map[string]bool{}
	}
	if s.Logs == nil {
		s.Logs = map[string]string{}
	}
}

func eventKey(kind, ns, name string) string { return kind + "/" + ns + "/" + name }
