package aa.test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.security.auth.callback.Callback;
import javax.security.auth.callback.UnsupportedCallbackException;
import javax.security.auth.login.AppConfigurationEntry;
import org.apache.kafka.common.security.auth.AuthenticateCallbackHandler;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerExtensionsValidatorCallback;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerToken;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallback;

/**
 * A test broker's OAUTHBEARER validator that accepts any token and appends it to the file
 * named by the system property aa.test.token.log, one per line: the AWS MSK IAM test reads
 * the tokens aa sent (a signed AWS request, which only MSK itself can check).
 */
public class RecordingTokenValidator implements AuthenticateCallbackHandler {
    private Path log;

    @Override
    public void configure(
            Map<String, ?> configs, String mechanism, List<AppConfigurationEntry> jaas) {
        log = Path.of(System.getProperty("aa.test.token.log"));
    }

    @Override
    public void handle(Callback[] callbacks) throws IOException, UnsupportedCallbackException {
        for (Callback callback : callbacks) {
            if (callback instanceof OAuthBearerValidatorCallback) {
                OAuthBearerValidatorCallback v = (OAuthBearerValidatorCallback) callback;
                String value = v.tokenValue();
                Files.writeString(log, value + "\n", StandardCharsets.UTF_8,
                        StandardOpenOption.CREATE, StandardOpenOption.APPEND);
                long now = System.currentTimeMillis();
                v.token(new OAuthBearerToken() {
                    public String value() { return value; }
                    public Set<String> scope() { return Set.of(); }
                    public long lifetimeMs() { return now + 15 * 60 * 1000; }
                    public String principalName() { return "aws-msk-iam"; }
                    public Long startTimeMs() { return now; }
                });
            } else if (callback instanceof OAuthBearerExtensionsValidatorCallback) {
                continue;  // no SASL extensions to check
            } else {
                throw new UnsupportedCallbackException(callback);
            }
        }
    }

    @Override
    public void close() {}
}
