package foreign

import "k8s.io/apimachinery/pkg/runtime/schema"

// builtin is a resource every cluster serves.
type builtin struct {
	group, resource, kind string
	versions              []string
	namespaced            bool
	// file is the name troubleshoot's clusterResources collector writes it under in
	// cluster-resources/ (pkg/constants/constants.go): a directory of <namespace>.json for a
	// namespaced resource, <file>.json for a cluster-scoped one. "" when it does not collect it.
	file string
}

// builtins are the built-in resources the checks read (pkg/collect) and those a support bundle
// holds. They are always discoverable from a capture, so the scan asks for each it needs and
// records the ones the capture lacks as unread, instead of taking them for not served.
var builtins = []builtin{
	{"", "pods", "Pod", []string{"v1"}, true, "pods"},
	{"", "events", "Event", []string{"v1"}, true, "events"},
	{"", "namespaces", "Namespace", []string{"v1"}, false, "namespaces"},
	{"", "nodes", "Node", []string{"v1"}, false, "nodes"},
	{"", "services", "Service", []string{"v1"}, true, "services"},
	{"", "endpoints", "Endpoints", []string{"v1"}, true, "endpoints"},
	{"", "persistentvolumes", "PersistentVolume", []string{"v1"}, false, "pvs"},
	{"", "persistentvolumeclaims", "PersistentVolumeClaim", []string{"v1"}, true, "pvcs"},
	{"", "configmaps", "ConfigMap", []string{"v1"}, true, "configmaps"},
	{"", "serviceaccounts", "ServiceAccount", []string{"v1"}, true, "serviceaccounts"},
	{"", "limitranges", "LimitRange", []string{"v1"}, true, "limitranges"},
	{"", "resourcequotas", "ResourceQuota", []string{"v1"}, true, "resource-quota"},
	{"apps", "deployments", "Deployment", []string{"v1"}, true, "deployments"},
	{"apps", "replicasets", "ReplicaSet", []string{"v1"}, true, "replicasets"},
	{"apps", "statefulsets", "StatefulSet", []string{"v1"}, true, "statefulsets"},
	{"apps", "daemonsets", "DaemonSet", []string{"v1"}, true, "daemonsets"},
	{"apps", "controllerrevisions", "ControllerRevision", []string{"v1"}, true, ""},
	{"batch", "jobs", "Job", []string{"v1"}, true, "jobs"},
	{"batch", "cronjobs", "CronJob", []string{"v1"}, true, "cronjobs"},
	{"policy", "poddisruptionbudgets", "PodDisruptionBudget", []string{"v1"}, true, "pod-disruption-budgets"},
	{"coordination.k8s.io", "leases", "Lease", []string{"v1"}, true, "leases"},
	{"discovery.k8s.io", "endpointslices", "EndpointSlice", []string{"v1"}, true, "endpointslices"},
	{"networking.k8s.io", "ingresses", "Ingress", []string{"v1"}, true, "ingress"},
	{"networking.k8s.io", "networkpolicies", "NetworkPolicy", []string{"v1"}, true, "network-policy"},
	{"networking.k8s.io", "ingressclasses", "IngressClass", []string{"v1"}, false, "ingress-classes"},
	{"storage.k8s.io", "storageclasses", "StorageClass", []string{"v1"}, false, "storage-classes"},
	{"storage.k8s.io", "volumeattachments", "VolumeAttachment", []string{"v1"}, false, "volumeattachments"},
	{"scheduling.k8s.io", "priorityclasses", "PriorityClass", []string{"v1"}, false, "priorityclasses"},
	{"rbac.authorization.k8s.io", "roles", "Role", []string{"v1"}, true, "roles"},
	{"rbac.authorization.k8s.io", "rolebindings", "RoleBinding", []string{"v1"}, true, "rolebindings"},
	{"rbac.authorization.k8s.io", "clusterroles", "ClusterRole", []string{"v1"}, false, "clusterroles"},
	{"rbac.authorization.k8s.io", "clusterrolebindings", "ClusterRoleBinding", []string{"v1"}, false, "clusterrolebindings"},
	{"certificates.k8s.io", "certificatesigningrequests", "CertificateSigningRequest", []string{"v1"}, false, "certificatesigningrequests"},
	{"admissionregistration.k8s.io", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", []string{"v1"}, false, "validating-webhook-configurations"},
	{"admissionregistration.k8s.io", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration", []string{"v1"}, false, "mutating-webhook-configurations"},
	{"admissionregistration.k8s.io", "validatingadmissionpolicies", "ValidatingAdmissionPolicy", []string{"v1"}, false, ""},
	{"admissionregistration.k8s.io", "validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding", []string{"v1"}, false, ""},
	{"apiregistration.k8s.io", "apiservices", "APIService", []string{"v1"}, false, ""},
	{"apiextensions.k8s.io", "customresourcedefinitions", "CustomResourceDefinition", []string{"v1"}, false, "custom-resource-definitions"},
}

func builtinByResource(gr schema.GroupResource) (builtin, bool) {
	for _, b := range builtins {
		if b.group == gr.Group && b.resource == gr.Resource {
			return b, true
		}
	}
	return builtin{}, false
}

func builtinByKind(group, kind string) (builtin, bool) {
	for _, b := range builtins {
		if b.group == group && b.kind == kind {
			return b, true
		}
	}
	return builtin{}, false
}

func builtinByFile(file string) (builtin, bool) {
	for _, b := range builtins {
		if b.file != "" && b.file == file {
			return b, true
		}
	}
	return builtin{}, false
}
