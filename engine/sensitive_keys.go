package engine

// sensitiveKeys are the normalized argument names (lower case, letters and
// digits only, so api_key, API-Key and x-api-key all normalize alike) whose
// values the approval view never shows. The list is exact, not a set of
// substrings: substrings hid session_title, token_count and secretary from
// the approver, and an agent could hide any value by choosing such a name.
// Credential-shaped values are caught by ContainsCredential whatever their
// key, so this list only needs the names that announce a secret.
var sensitiveKeys = map[string]struct{}{
	// Passwords and passphrases.
	"password": {}, "passwd": {}, "pass": {}, "pwd": {}, "passphrase": {},
	"newpassword": {}, "oldpassword": {}, "currentpassword": {}, "userpassword": {},
	"dbpassword": {}, "adminpassword": {}, "rootpassword": {},
	// Shared secrets.
	"secret": {}, "clientsecret": {}, "apisecret": {}, "appsecret": {}, "sharedsecret": {},
	"webhooksecret": {}, "signingsecret": {}, "sessionsecret": {}, "secretkey": {},
	"secretaccesskey": {}, "awssecretaccesskey": {}, "secrettoken": {},
	// Tokens.
	"token": {}, "accesstoken": {}, "refreshtoken": {}, "idtoken": {}, "authtoken": {},
	"bearertoken": {}, "apitoken": {}, "sessiontoken": {}, "securitytoken": {},
	"awssessiontoken": {}, "csrftoken": {}, "xsrftoken": {}, "xcsrftoken": {},
	"xxsrftoken": {}, "oauthtoken": {}, "personalaccesstoken": {}, "githubtoken": {},
	"ghtoken": {}, "npmtoken": {}, "slacktoken": {}, "bottoken": {}, "jwt": {}, "bearer": {},
	// API and access keys.
	"apikey": {}, "xapikey": {}, "accesskey": {}, "accesskeyid": {}, "awsaccesskeyid": {},
	"privatekey": {}, "privkey": {}, "sshprivatekey": {}, "signingkey": {}, "clientkey": {},
	"encryptionkey": {}, "masterkey": {}, "sessionkey": {},
	// HTTP authentication and cookies.
	"auth": {}, "authorization": {}, "proxyauthorization": {}, "cookie": {}, "cookies": {},
	"setcookie": {}, "sessionid": {}, "sessioncookie": {},
	// Credentials and one-time codes.
	"credential": {}, "credentials": {}, "creds": {}, "connectionstring": {},
	"otp": {}, "totp": {}, "mfacode": {}, "otpcode": {},
}

// maxSensitiveKey bounds the normalization buffer: no listed name is longer,
// so a longer key is not sensitive and needs no allocation to tell.
const maxSensitiveKey = 32

// IsSensitiveKey reports whether an argument named key holds a value the
// approval view must never show, whatever the value looks like. It does not
// allocate: it is called for every key of every approval.
func IsSensitiveKey(key string) bool {
	var buf [maxSensitiveKey]byte
	n := 0
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		default:
			continue
		}
		if n == len(buf) {
			return false
		}
		buf[n] = c
		n++
	}
	_, ok := sensitiveKeys[string(buf[:n])]
	return ok
}
