// Writes an OpenSearch keystore (secure settings such as s3.client.default.access_key) from
// key=value lines on standard input: the Maven-assembled home has no keystore CLI, and
// secrets passed as arguments would show in the process list.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.opensearch.common.settings.KeyStoreWrapper;

public class Keystore {
    public static void main(String[] args) throws Exception {
        Path configDir = Path.of(args[0]);
        KeyStoreWrapper keystore = KeyStoreWrapper.create();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            if (line.isBlank()) continue;
            int eq = line.indexOf('=');
            if (eq <= 0) throw new IllegalArgumentException("want key=value, got a line without '='");
            keystore.setString(line.substring(0, eq), line.substring(eq + 1).toCharArray());
        }
        keystore.save(configDir, new char[0]);
    }
}
