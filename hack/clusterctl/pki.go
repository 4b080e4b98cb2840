package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// frontProxyClientName is the front-proxy client certificate's CN, the one name
// --requestheader-allowed-names admits (kubeadm's name for it).
const frontProxyClientName = "front-proxy-client"

// certValidity is long enough for any test run or `make run` session and short
// enough that a leaked state directory is not a long-lived credential.
const certValidity = 30 * 24 * time.Hour

// keyPair is a certificate with its private key, kept in memory and written as PEM.
type keyPair struct {
	cert    *x509.Certificate
	certPEM []byte
	key     *ecdsa.PrivateKey
	keyPEM  []byte
}

func newKey() (*ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to generate key: %w", err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to encode key: %w", err)
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

func serial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
}

// newCA makes a self-signed certificate authority.
func newCA(commonName string) (*keyPair, error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("failed to sign CA %s: %w", commonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &keyPair{cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), key, keyPEM}, nil
}

// issue signs a leaf certificate. Client certificates carry the user as CN and the
// groups as O, which is how kube-apiserver's x509 authenticator reads them.
func (ca *keyPair) issue(commonName string, groups []string, dnsNames []string, ips []net.IP, server bool) (*keyPair, error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, err
	}
	usage := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	if server {
		usage = append(usage, x509.ExtKeyUsageServerAuth)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: commonName, Organization: groups},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(certValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  usage,
		DNSNames:     dnsNames,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, fmt.Errorf("failed to sign certificate %s: %w", commonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &keyPair{cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), key, keyPEM}, nil
}

// write stores the pair as <dir>/<name>.crt and <dir>/<name>.key (key readable by the owner only).
func (kp *keyPair) write(dir, name string) error {
	if err := os.WriteFile(filepath.Join(dir, name+".crt"), kp.certPEM, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name+".key"), kp.keyPEM, 0o600)
}

// pki is every credential the control plane needs.
type pki struct {
	ca                *keyPair
	apiserver         *keyPair
	admin             *keyPair
	controllerManager *keyPair
	scheduler         *keyPair
	kwok              *keyPair
	// kubelet is the real node's client identity (the Node authorizer's system:node:<name>).
	kubelet *keyPair
	// kubeletClient is how kube-apiserver authenticates to that kubelet (logs, exec).
	kubeletClient *keyPair
	// saSigner signs service-account tokens (kube-apiserver and the token controller).
	saSigner *keyPair
	// frontProxyCA signs the one certificate kube-apiserver presents when it forwards a
	// request to an aggregated API (frontProxyClient); the aggregated server trusts the
	// X-Remote-User headers only from a client holding a certificate of this CA. It is apart
	// from ca, as kubeadm keeps it: a client certificate of ca must not be able to claim any
	// user by sending headers.
	frontProxyCA     *keyPair
	frontProxyClient *keyPair
}

// newPKI makes one CA for serving and client certificates and a separate key for
// service-account tokens, as a real cluster keeps them apart.
func newPKI(dir string, extraIPs []net.IP) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	ca, err := newCA("olmv1-local-ca")
	if err != nil {
		return nil, err
	}
	ips := append([]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1"), net.ParseIP(serviceIP)}, extraIPs...)
	dns := []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
	p := &pki{ca: ca}
	if p.apiserver, err = ca.issue("kube-apiserver", nil, dns, ips, true); err != nil {
		return nil, err
	}
	if p.admin, err = ca.issue("olmv1-admin", []string{"system:masters"}, nil, nil, false); err != nil {
		return nil, err
	}
	// The built-in RBAC roles bind these exact user names.
	if p.controllerManager, err = ca.issue("system:kube-controller-manager", nil, nil, nil, false); err != nil {
		return nil, err
	}
	if p.scheduler, err = ca.issue("system:kube-scheduler", nil, nil, nil, false); err != nil {
		return nil, err
	}
	// kwok plays every kubelet (node and pod status for all nodes); give it full rights.
	if p.kwok, err = ca.issue("kwok", []string{"system:masters"}, nil, nil, false); err != nil {
		return nil, err
	}
	if p.kubelet, err = ca.issue("system:node:"+realNodeName, []string{"system:nodes"}, nil, nil, false); err != nil {
		return nil, err
	}
	if p.kubeletClient, err = ca.issue("kube-apiserver-kubelet-client", []string{"system:masters"}, nil, nil, false); err != nil {
		return nil, err
	}
	if p.saSigner, err = newCA("service-account-signer"); err != nil {
		return nil, err
	}
	if p.frontProxyCA, err = newCA("front-proxy-ca"); err != nil {
		return nil, err
	}
	if p.frontProxyClient, err = p.frontProxyCA.issue(frontProxyClientName, nil, nil, nil, false); err != nil {
		return nil, err
	}
	for name, kp := range map[string]*keyPair{
		"ca": p.ca, "apiserver": p.apiserver, "admin": p.admin, "controller-manager": p.controllerManager,
		"scheduler": p.scheduler, "kwok": p.kwok, "sa": p.saSigner,
		"kubelet": p.kubelet, "kubelet-client": p.kubeletClient,
		"front-proxy-ca": p.frontProxyCA, "front-proxy-client": p.frontProxyClient,
	} {
		if err := kp.write(dir, name); err != nil {
			return nil, fmt.Errorf("failed to write %s credentials: %w", name, err)
		}
	}
	return p, nil
}

// loadPKI reads back the CA and admin credentials `up` wrote, for commands that run later
// against a running cluster (the egress proxy).
func loadPKI(dir string) (*pki, error) {
	load := func(name string) (*keyPair, error) {
		certPEM, err := os.ReadFile(filepath.Join(dir, name+".crt"))
		if err != nil {
			return nil, err
		}
		keyPEM, err := os.ReadFile(filepath.Join(dir, name+".key"))
		if err != nil {
			return nil, err
		}
		block, _ := pem.Decode(certPEM)
		if block == nil {
			return nil, fmt.Errorf("%s.crt holds no PEM certificate", name)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		return &keyPair{cert: cert, certPEM: certPEM, keyPEM: keyPEM}, nil
	}
	ca, err := load("ca")
	if err != nil {
		return nil, err
	}
	admin, err := load("admin")
	if err != nil {
		return nil, err
	}
	return &pki{ca: ca, admin: admin}, nil
}
