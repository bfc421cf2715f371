package testcluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"time"
)

// ca is the cluster's single certificate authority: it signs the serving cert and every client cert,
// so the apiserver's --client-ca-file and the kubeconfigs' certificate-authority are the same file.
type ca struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
}

func newCA() (*ca, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "workloaddoctor-testcluster-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, cert, err := sign(tmpl, key.Public(), nil, key)
	if err != nil {
		return nil, fmt.Errorf("self-sign CA: %w", err)
	}
	return &ca{cert: cert, key: key, certPEM: pemBlock("CERTIFICATE", der)}, nil
}

// issue returns PEM cert and key for a leaf; serving leaves get loopback SANs, client leaves carry
// the user in CN and the groups in O, which is how the apiserver's x509 authenticator reads them.
func (c *ca) issue(cn string, orgs []string, serving bool) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate key for %q: %w", cn, err)
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore:   time.Now().Add(-time.Hour),
		NotAfter:    time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if serving {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
		tmpl.DNSNames = []string{"localhost"}
	}
	der, _, err := sign(tmpl, key.Public(), c.cert, c.key)
	if err != nil {
		return nil, nil, fmt.Errorf("sign certificate for %q: %w", cn, err)
	}
	keyPEM, err = privateKeyPEM(key)
	if err != nil {
		return nil, nil, err
	}
	return pemBlock("CERTIFICATE", der), keyPEM, nil
}

// sign creates a certificate; a nil parent means self-signed.
func sign(tmpl *x509.Certificate, pub crypto.PublicKey, parent *x509.Certificate, signer crypto.Signer) ([]byte, *x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, err
	}
	tmpl.SerialNumber = serial
	if parent == nil {
		parent = tmpl
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return der, cert, err
}

// newServiceAccountKeys returns the PEM private and public key the apiserver signs and verifies
// service-account tokens with (kcm's token controller signs with the same private key).
func newServiceAccountKeys() (privPEM, pubPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate service-account key: %w", err)
	}
	privPEM, err = privateKeyPEM(key)
	if err != nil {
		return nil, nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, nil, fmt.Errorf("marshal service-account public key: %w", err)
	}
	return privPEM, pemBlock("PUBLIC KEY", pub), nil
}

func privateKeyPEM(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("marshal private key: %w", err)
	}
	return pemBlock("EC PRIVATE KEY", der), nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func writeFiles(files map[string][]byte) error {
	for path, data := range files {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	return nil
}

// writeServingCert writes a loopback serving certificate the cluster CA signs, and its key, as
// <name>.crt and <name>.key in the cluster's directory, for a component other than the apiserver.
func (c *Cluster) writeServingCert(name string) (certFile, keyFile string, err error) {
	certPEM, keyPEM, err := c.ca.issue(name, nil, true)
	if err != nil {
		return "", "", err
	}
	certFile, keyFile = c.path(name+".crt"), c.path(name+".key")
	if err := writeFiles(map[string][]byte{certFile: certPEM, keyFile: keyPEM}); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}

// LoopbackTLS makes a certificate authority of its own and a loopback serving certificate it
// signs: for a server a test runs that the apiserver calls (a webhook), which trusts the CA
// through caPEM (a webhook's caBundle), not the cluster's.
func LoopbackTLS() (caPEM []byte, cert tls.Certificate, err error) {
	authority, err := newCA()
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	certPEM, keyPEM, err := authority.issue("loopback-server", nil, true)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	cert, err = tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, tls.Certificate{}, fmt.Errorf("load loopback serving certificate: %w", err)
	}
	return authority.certPEM, cert, nil
}
