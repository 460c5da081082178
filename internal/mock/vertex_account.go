package mock

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
)

// ServiceAccount is a Google service account: its key signs the JWT
// assertions that a mock's token endpoint (POST /token) exchanges for
// access tokens when Options.ServiceAccount is it. Tests make one with
// NewServiceAccount and hand the gateway its JSON key.
type ServiceAccount struct {
	// Email is the account's client_email, the assertions' issuer.
	Email string
	// KeyID is the key's private_key_id, sent as the assertions' kid.
	KeyID string
	// Key signs the assertions (RS256).
	Key *rsa.PrivateKey
}

// serviceAccountBits is the size of the RSA keys NewServiceAccount makes,
// as Google's own.
const serviceAccountBits = 2048

// NewServiceAccount returns a service account called email with a fresh
// 2048-bit RSA key.
func NewServiceAccount(email string) (*ServiceAccount, error) {
	key, err := rsa.GenerateKey(rand.Reader, serviceAccountBits)
	if err != nil {
		return nil, fmt.Errorf("generating a service-account key: %w", err)
	}
	id := make([]byte, 20)
	_, _ = rand.Read(id) // crypto/rand.Read never fails
	return &ServiceAccount{Email: email, KeyID: hex.EncodeToString(id), Key: key}, nil
}

// serviceAccountFile is a service-account JSON key as the Google Cloud
// console downloads it.
type serviceAccountFile struct {
	Type                    string `json:"type"`
	ProjectID               string `json:"project_id"`
	PrivateKeyID            string `json:"private_key_id"`
	PrivateKey              string `json:"private_key"`
	ClientEmail             string `json:"client_email"`
	ClientID                string `json:"client_id"`
	AuthURI                 string `json:"auth_uri"`
	TokenURI                string `json:"token_uri"`
	AuthProviderX509CertURL string `json:"auth_provider_x509_cert_url"`
	UniverseDomain          string `json:"universe_domain"`
}

// JSON returns the account's JSON key file for project, its token_uri
// pointing at tokenURI (TokenURI of a mock's base URL).
func (sa *ServiceAccount) JSON(project, tokenURI string) []byte {
	der, err := x509.MarshalPKCS8PrivateKey(sa.Key)
	if err != nil {
		panic(fmt.Sprintf("mock: encoding an RSA key: %v", err)) // a bug: RSA keys always encode
	}
	f := serviceAccountFile{
		Type: "service_account", ProjectID: project, PrivateKeyID: sa.KeyID,
		PrivateKey:  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		ClientEmail: sa.Email, ClientID: "100000000000000000001",
		AuthURI: "https://accounts.google.com/o/oauth2/auth", TokenURI: tokenURI,
		AuthProviderX509CertURL: "https://www.googleapis.com/oauth2/v1/certs", UniverseDomain: "googleapis.com",
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		panic(fmt.Sprintf("mock: encoding a service account: %v", err)) // a bug: every field is a string
	}
	return data
}

// ParseServiceAccount reads a service-account JSON key (a file the Google
// Cloud console downloaded, or one JSON wrote).
func ParseServiceAccount(data []byte) (*ServiceAccount, error) {
	var f serviceAccountFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("reading a service-account key: %w", err)
	}
	if f.Type != "service_account" || f.ClientEmail == "" {
		return nil, errors.New("reading a service-account key: not a service_account key with a client_email")
	}
	block, _ := pem.Decode([]byte(f.PrivateKey))
	if block == nil {
		return nil, errors.New("reading a service-account key: private_key is not PEM")
	}
	var key *rsa.PrivateKey
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		key, _ = k.(*rsa.PrivateKey)
	} else if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		key = k
	}
	if key == nil {
		return nil, errors.New("reading a service-account key: private_key is not an RSA private key")
	}
	return &ServiceAccount{Email: f.ClientEmail, KeyID: f.PrivateKeyID, Key: key}, nil
}

// TokenURI is the token endpoint of the mock at baseURL, for a service
// account's token_uri.
func TokenURI(baseURL string) string { return baseURL + tokenPath }
