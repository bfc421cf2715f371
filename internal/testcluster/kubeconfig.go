package testcluster

import (
	"fmt"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// writeKubeconfig writes a single-context kubeconfig for a client certificate minted for user/groups.
func (c *Cluster) writeKubeconfig(path, namespace, user string, groups ...string) error {
	certPEM, keyPEM, err := c.ca.issue(user, groups, false)
	if err != nil {
		return err
	}
	const name = "testcluster"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: c.APIServerURL, CertificateAuthorityData: c.ca.certPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: user, Namespace: namespace}
	cfg.CurrentContext = name
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}
