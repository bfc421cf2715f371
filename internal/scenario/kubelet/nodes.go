package kubelet

// NodeLabel is the node label kwok selects the nodes it plays the kubelet of by. The apiserver
// evaluates it, so a node whose label is taken off leaves kwok's watch and its Lease is no longer
// renewed: the node's kubelet is dead as far as the cluster can tell.
const (
	NodeLabel      = "type"
	NodeLabelValue = "kwok"
)
