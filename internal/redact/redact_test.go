package redact

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// secret is the password every form below carries.
const secret = "Zq7-s3cr3t"

// Forms are the connection-string forms a password can take; each carries
// secret (or an encoding of it). Exported to the cmd/wfstore table through
// a copy there.
var forms = []struct{ name, dsn, want, pw string }{
	{"url userinfo", "postgres://alice:" + secret + "@127.0.0.1:1/db?sslmode=disable", "postgres://alice:xxxxx@127.0.0.1:1/db?sslmode=disable", secret},
	{"postgresql scheme", "postgresql://alice:" + secret + "@127.0.0.1:1/db", "postgresql://alice:xxxxx@127.0.0.1:1/db", secret},
	{"url query password", "postgres://alice@127.0.0.1:1/db?password=" + secret + "&sslmode=disable", "postgres://alice@127.0.0.1:1/db?password=xxxxx&sslmode=disable", secret},
	{"url query PASSWORD", "postgres://alice@127.0.0.1:1/db?PASSWORD=" + secret, "postgres://alice@127.0.0.1:1/db?PASSWORD=xxxxx", secret},
	{"url query sslpassword", "postgres://alice@127.0.0.1:1/db?sslpassword=" + secret, "postgres://alice@127.0.0.1:1/db?sslpassword=xxxxx", secret},
	{"url query encoded key", "postgres://alice@127.0.0.1:1/db?pass%77ord=" + secret, "postgres://alice@127.0.0.1:1/db?pass%77ord=xxxxx", secret},
	{"url percent-encoded password", "postgres://alice:Zq7%2Ds3cr3t@127.0.0.1:1/db", "postgres://alice:xxxxx@127.0.0.1:1/db", secret},
	{"url password with @ and /", "postgres://alice:" + secret + "@/x@127.0.0.1:1/db", "postgres://alice:xxxxx@127.0.0.1:1/db", secret + "@/x"},
	{"unparseable url", "postgres://alice:" + secret + "@127.0.0.1:notaport/db", "postgres://xxxxx@127.0.0.1:notaport/db", secret},
	{"multi-host url", "postgres://alice:" + secret + "@127.0.0.1:1,127.0.0.1:2/db", "postgres://alice:xxxxx@127.0.0.1:1,127.0.0.1:2/db", secret},
	{"keyword/value", "host=127.0.0.1 port=1 user=alice password=" + secret + " dbname=db", "host=127.0.0.1 port=1 user=alice password=xxxxx dbname=db", secret},
	{"keyword/value PASSWORD", "host=127.0.0.1 port=1 PASSWORD=" + secret, "host=127.0.0.1 port=1 PASSWORD=xxxxx", secret},
	{"keyword/value Password", "host=127.0.0.1 port=1 Password=" + secret, "host=127.0.0.1 port=1 Password=xxxxx", secret},
	{"keyword/value sslpassword", "host=127.0.0.1 port=1 sslpassword=" + secret, "host=127.0.0.1 port=1 sslpassword=xxxxx", secret},
	{"keyword/value spaces", "host=127.0.0.1 port=1 password = " + secret, "host=127.0.0.1 port=1 password = xxxxx", secret},
	{"keyword/value quoted", "host=127.0.0.1 port=1 password='" + secret + " it\\'s' user=alice", "host=127.0.0.1 port=1 password=xxxxx user=alice", secret + " it's"},
	{"keyword/value unterminated quote", "host=127.0.0.1 password='" + secret + " user=alice", "host=127.0.0.1 password=xxxxx", secret + " user=alice"},
	{"keyword/value bad port", "host=127.0.0.1 port=notaport password=" + secret, "host=127.0.0.1 port=notaport password=xxxxx", secret},
	{"keyword/value stray word", "host=127.0.0.1 password=" + secret + " bogus", "host=127.0.0.1 password=xxxxx bogus", secret},
}

func TestDSNRemovesEverySecret(t *testing.T) {
	for _, f := range forms {
		got := DSN(f.dsn)
		assert.Equal(t, f.want, got, f.name)
		assert.NotContains(t, got, "s3cr3t", f.name)
	}
}

func TestTextRemovesTheSecretsOfADSNWhereverTheyAppear(t *testing.T) {
	for _, f := range forms {
		for _, msg := range []string{
			"cannot parse `" + f.dsn + "`: failed",
			"connecting to " + f.dsn + ": refused",
			"failed to connect to `user=alice database=db`: password " + f.pw + " rejected",
		} {
			got := Text(msg, f.dsn)
			assert.NotContains(t, got, f.pw, "%s: %s", f.name, got)
		}
	}
	// Text with no DSN still masks the forms it can see.
	assert.Equal(t, "dial postgres://bob:xxxxx@h/db and password=xxxxx", Text("dial postgres://bob:pw@h/db and password=pw"))
	// Ordinary text is left alone.
	assert.Equal(t, "open /tmp/x.db: no such file", Text("open /tmp/x.db: no such file", forms[0].dsn))
}

func TestErrorKeepsTheChain(t *testing.T) {
	err := Error(fmt.Errorf("connecting to %s: %w", forms[0].dsn, fs.ErrNotExist), forms[0].dsn)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.False(t, strings.Contains(err.Error(), secret))
	assert.Nil(t, Error(nil, "x"))
	var target *redacted
	assert.True(t, errors.As(err, &target))
}
