package mock

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/textproto"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// sigV4Skew is how far a request's X-Amz-Date may be from the mock's
// clock, as AWS allows.
const sigV4Skew = 5 * time.Minute

// amzDateFormat is X-Amz-Date's layout.
const amzDateFormat = "20060102T150405Z"

// awsCredentials are the SigV4 credentials a mock accepts; zero accepts
// none.
type awsCredentials struct {
	keyID, secret string
	session       string     // the session token of temporary credentials; "" for long-term keys
	signer        *v4.Signer // safe for concurrent use
}

func newAWSCredentials(keyID, secret, session string) awsCredentials {
	if secret == "" {
		return awsCredentials{}
	}
	return awsCredentials{keyID: keyID, secret: secret, session: session, signer: v4.NewSigner()}
}

// bedrockAuthError is a 403 of exception typ, in Bedrock's shape.
func bedrockAuthError(status int, typ, msg string) *apiError {
	return &apiError{status: status, typ: typ, message: msg}
}

// authenticateBedrock checks a Bedrock request's credentials as AWS does,
// and answers its error when they are wrong: a SigV4 signature made with
// Options.AWSAccessKeyID and AWSSecretAccessKey (see verifySigV4), or
// Options.APIKey as a Bedrock API key (Authorization: Bearer). With none
// of them set any request passes.
func (c *call) authenticateBedrock() bool {
	if c.s.aws.secret == "" && c.s.apiKey == "" {
		return true
	}
	auth := c.r.Header.Get("Authorization")
	var e *apiError
	switch {
	case strings.HasPrefix(auth, sigV4Algorithm+" "):
		if c.s.aws.secret == "" {
			e = bedrockAuthError(http.StatusForbidden, "UnrecognizedClientException", "The security token included in the request is invalid.")
		} else {
			e = c.verifySigV4(auth)
		}
	case strings.HasPrefix(auth, "Bearer "):
		if key := strings.TrimPrefix(auth, "Bearer "); c.s.apiKey == "" || key != c.s.apiKey {
			e = bedrockAuthError(http.StatusForbidden, "UnrecognizedClientException", "The security token included in the request is invalid.")
		}
	case auth == "":
		e = bedrockAuthError(http.StatusForbidden, "MissingAuthenticationTokenException", "Missing Authentication Token")
	default:
		e = bedrockAuthError(http.StatusBadRequest, "IncompleteSignatureException",
			"Authorization header requires 'Credential' parameter. Authorization header requires 'Signature' parameter. Authorization header requires 'SignedHeaders' parameter.")
	}
	if e != nil {
		c.fail(*e)
		return false
	}
	return true
}

// sigV4Algorithm starts a SigV4 Authorization header.
const sigV4Algorithm = "AWS4-HMAC-SHA256"

// sigV4Auth is a parsed SigV4 Authorization header.
type sigV4Auth struct {
	keyID, date, region, service string
	signedHeaders                []string
	signature                    string
}

// parseSigV4 reads "AWS4-HMAC-SHA256 Credential=K/D/R/S/aws4_request,
// SignedHeaders=a;b, Signature=hex".
func parseSigV4(auth string) (sigV4Auth, bool) {
	var a sigV4Auth
	var cred, signed string
	for _, kv := range strings.Split(strings.TrimPrefix(auth, sigV4Algorithm+" "), ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
		switch k {
		case "Credential":
			cred = v
		case "SignedHeaders":
			signed = v
		case "Signature":
			a.signature = v
		}
	}
	scope := strings.Split(cred, "/")
	if len(scope) != 5 || scope[4] != "aws4_request" || signed == "" || a.signature == "" {
		return a, false
	}
	a.keyID, a.date, a.region, a.service = scope[0], scope[1], scope[2], scope[3]
	a.signedHeaders = strings.Split(signed, ";")
	return a, true
}

// verifySigV4 checks a SigV4 signature as AWS does: the key id is the
// mock's, the X-Amz-Security-Token is the mock's session token (none for
// long-term keys) and is signed, the scope is service "bedrock" on the X-Amz-Date's day, that
// date is within 5 minutes of the mock's clock, and signing the request's
// signed headers, method, path, query and body again with the mock's
// secret gives the same signature. It returns the error to answer, or nil.
func (c *call) verifySigV4(auth string) *apiError {
	a, ok := parseSigV4(auth)
	if !ok {
		return bedrockAuthError(http.StatusBadRequest, "IncompleteSignatureException",
			"Authorization header requires 'Credential', 'SignedHeaders' and 'Signature' parameters in the form Credential=KEY/DATE/REGION/SERVICE/aws4_request.")
	}
	if a.keyID != c.s.aws.keyID {
		return bedrockAuthError(http.StatusForbidden, "UnrecognizedClientException", "The security token included in the request is invalid.")
	}
	if tok := c.r.Header.Get("X-Amz-Security-Token"); tok != c.s.aws.session ||
		(tok != "" && !slices.Contains(a.signedHeaders, "x-amz-security-token")) {
		return bedrockAuthError(http.StatusForbidden, "UnrecognizedClientException", "The security token included in the request is invalid.")
	}
	invalid := func(msg string) *apiError {
		return bedrockAuthError(http.StatusForbidden, "InvalidSignatureException", msg)
	}
	if a.service != "bedrock" {
		return invalid("Credential should be scoped to correct service: 'bedrock'. ")
	}
	amzDate := c.r.Header.Get("X-Amz-Date")
	at, err := time.Parse(amzDateFormat, amzDate)
	if err != nil || !slices.Contains(a.signedHeaders, "x-amz-date") || !slices.Contains(a.signedHeaders, "host") {
		return bedrockAuthError(http.StatusBadRequest, "IncompleteSignatureException",
			"Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header, signed with the 'host' header.")
	}
	if !strings.HasPrefix(amzDate, a.date) {
		return invalid("Credential should be scoped to a valid date: '" + amzDate[:8] + "'.")
	}
	now := c.s.clock.Now().UTC()
	switch {
	case now.Sub(at) > sigV4Skew:
		return invalid("Signature expired: " + amzDate + " is now earlier than " + now.Add(-sigV4Skew).Format(amzDateFormat) +
			" (" + now.Format(amzDateFormat) + " - 5 min.)")
	case at.Sub(now) > sigV4Skew:
		return invalid("Signature not yet current: " + amzDate + " is still later than " + now.Add(sigV4Skew).Format(amzDateFormat) +
			" (" + now.Format(amzDateFormat) + " + 5 min.)")
	}
	if !hmac.Equal([]byte(c.resign(a, at)), []byte(a.signature)) {
		return invalid("The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.")
	}
	return nil
}

// resign signs again, with the mock's secret, a copy of the request made
// of the parts a's signature covers, and returns the signature.
func (c *call) resign(a sigV4Auth, at time.Time) string {
	u := *c.r.URL
	u.Scheme, u.Host = "http", c.r.Host
	if c.r.TLS != nil {
		u.Scheme = "https"
	}
	req := &http.Request{Method: c.r.Method, URL: &u, Host: c.r.Host, Header: http.Header{}}
	for _, name := range a.signedHeaders {
		switch name {
		case "host":
		case "content-length":
			req.ContentLength = c.r.ContentLength
		default:
			req.Header[textproto.CanonicalMIMEHeaderKey(name)] = c.r.Header.Values(name)
		}
	}
	sum := sha256.Sum256(c.body)
	creds := aws.Credentials{AccessKeyID: a.keyID, SecretAccessKey: c.s.aws.secret}
	if err := c.s.aws.signer.SignHTTP(c.r.Context(), creds, req, hex.EncodeToString(sum[:]), a.service, a.region, at); err != nil {
		return ""
	}
	got, _ := parseSigV4(req.Header.Get("Authorization"))
	return got.signature
}
