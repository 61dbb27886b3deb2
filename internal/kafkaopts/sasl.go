package kafkaopts

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/aws"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/sharerelay/sharerelay/config"
)

// Mechanism returns the SASL mechanism s configures, or nil when s names
// none. Errors never include a credential.
func Mechanism(s config.SASL) (sasl.Mechanism, error) {
	switch s.Mechanism {
	case "":
		return nil, nil
	case config.MechanismPlain:
		return plain.Auth{User: s.Username, Pass: s.Password.Reveal()}.AsMechanism(), nil
	case config.MechanismScramSHA256:
		return scram.Auth{User: s.Username, Pass: s.Password.Reveal()}.AsSha256Mechanism(), nil
	case config.MechanismScramSHA512:
		return scram.Auth{User: s.Username, Pass: s.Password.Reveal()}.AsSha512Mechanism(), nil
	case config.MechanismOAuthBearer:
		switch {
		case s.TokenFile != "":
			return oauth.Oauth((&tokenFile{path: s.TokenFile, extensions: s.Extensions}).auth), nil
		case s.TokenURL != "":
			return oauth.Oauth(newTokenEndpoint(s).auth), nil
		}
		return nil, errors.New("sasl: OAUTHBEARER needs token_file or token_url")
	case config.MechanismAWSMSKIAM:
		return mskIAM(s.Region)
	}
	return nil, fmt.Errorf("sasl.mechanism: unknown mechanism %q", s.Mechanism)
}

// tokenFile serves OAUTHBEARER tokens from a file that another process
// rotates (a sidecar, a projected Kubernetes secret): the file is read
// again whenever its modification time or size changes, and its content,
// less surrounding white space, is the token.
type tokenFile struct {
	path       string
	extensions map[string]string

	mu    sync.Mutex
	mod   time.Time
	size  int64
	token string
}

// auth is the oauth.Oauth callback: it returns the file's current token.
func (f *tokenFile) auth(context.Context) (oauth.Auth, error) {
	fi, err := os.Stat(f.path)
	if err != nil {
		return oauth.Auth{}, fmt.Errorf("OAUTHBEARER token file: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.token == "" || !fi.ModTime().Equal(f.mod) || fi.Size() != f.size {
		data, err := os.ReadFile(f.path)
		if err != nil {
			return oauth.Auth{}, fmt.Errorf("OAUTHBEARER token file: %w", err)
		}
		tok := strings.TrimSpace(string(data))
		if tok == "" {
			return oauth.Auth{}, fmt.Errorf("OAUTHBEARER token file %s is empty", f.path)
		}
		f.token, f.mod, f.size = tok, fi.ModTime(), fi.Size()
	}
	return oauth.Auth{Token: f.token, Extensions: f.extensions}, nil
}

// RefreshBefore is how long before its expiry a token from a token endpoint
// is replaced: a connection authenticating with it must not outlive it.
const RefreshBefore = 30 * time.Second

// tokenEndpoint serves OAUTHBEARER tokens fetched from an OAuth 2 token
// endpoint with the client-credentials grant (RFC 6749 §4.4). A token is
// reused until RefreshBefore its expiry; one without an expiry is fetched
// anew for each authentication. Concurrent authentications wait for one
// fetch.
type tokenEndpoint struct {
	cfg        clientcredentials.Config
	extensions map[string]string
	now        func() time.Time // tests move it

	mu  sync.Mutex
	tok *oauth2.Token
}

// newTokenEndpoint returns the token endpoint of s (token_url, client_id,
// client_secret, scope, extensions).
func newTokenEndpoint(s config.SASL) *tokenEndpoint {
	return &tokenEndpoint{
		cfg: clientcredentials.Config{
			ClientID:     s.ClientID,
			ClientSecret: s.ClientSecret.Reveal(),
			TokenURL:     s.TokenURL,
			Scopes:       strings.Fields(s.Scope),
		},
		extensions: s.Extensions,
		now:        time.Now,
	}
}

// auth is the oauth.Oauth callback: it returns a token that is valid for
// at least RefreshBefore, fetching one if needed within ctx.
func (e *tokenEndpoint) auth(ctx context.Context) (oauth.Auth, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.tok == nil || e.tok.Expiry.IsZero() || !e.now().Before(e.tok.Expiry.Add(-RefreshBefore)) {
		tok, err := e.cfg.Token(ctx)
		if err != nil {
			return oauth.Auth{}, fmt.Errorf("OAUTHBEARER: fetching a token from %s: %w", redactURL(e.cfg.TokenURL), err)
		}
		if tok.AccessToken == "" {
			return oauth.Auth{}, fmt.Errorf("OAUTHBEARER: %s returned no access token", redactURL(e.cfg.TokenURL))
		}
		e.tok = tok
	}
	return oauth.Auth{Token: e.tok.AccessToken, Extensions: e.extensions}, nil
}

// redactURL drops the query of a token URL: a misconfigured one could
// carry a secret there.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "the token endpoint"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// mskIAM returns the AWS_MSK_IAM mechanism with credentials from the AWS
// SDK's default chain: environment, shared config and credentials files,
// SSO, web identity (EKS), container (ECS) and instance (EC2) roles. The
// SDK caches them and refreshes them before they expire. Loading the
// configuration reads files only; credentials are retrieved when a
// connection authenticates.
//
// franz-go signs with the region in the broker's host name (MSK names
// carry it), else AWS_REGION or AWS_DEFAULT_REGION.
func mskIAM(region string) (sasl.Mechanism, error) {
	var opts []func(*awsconfig.LoadOptions) error
	if region != "" {
		opts = append(opts, awsconfig.WithRegion(region))
	}
	cfg, err := awsconfig.LoadDefaultConfig(context.Background(), opts...)
	if err != nil {
		return nil, fmt.Errorf("sasl AWS_MSK_IAM: loading the AWS configuration: %w", err)
	}
	return aws.ManagedStreamingIAM(awsCredentials(cfg.Credentials)), nil
}

// awsCredentials adapts an AWS credentials provider to franz-go's callback.
func awsCredentials(p awssdk.CredentialsProvider) func(context.Context) (aws.Auth, error) {
	return func(ctx context.Context) (aws.Auth, error) {
		if p == nil {
			return aws.Auth{}, errors.New("AWS_MSK_IAM: no AWS credentials provider")
		}
		c, err := p.Retrieve(ctx)
		if err != nil {
			return aws.Auth{}, fmt.Errorf("AWS_MSK_IAM: retrieving AWS credentials: %w", err)
		}
		return aws.Auth{AccessKey: c.AccessKeyID, SecretKey: c.SecretAccessKey, SessionToken: c.SessionToken}, nil
	}
}
