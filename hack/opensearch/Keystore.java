// Writes and reads OpenSearch keystores with OpenSearch's own KeyStoreWrapper, on a home
// assembled from Maven Central, which has no keystore CLI (keystore-cli is not published
// there). Two uses:
//   Keystore.java CONFIG < lines     a keystore of key=value lines on standard input
//                                    (local nodes: secrets as arguments would show in the
//                                    process list);
//   Keystore.java CONFIG create | add-file KEY FILE | list
//                                    the subset of the official bin/opensearch-keystore the
//                                    operator's keystore init container runs (see
//                                    hack/opensearch/opensearch-keystore).
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.TreeSet;
import org.opensearch.common.settings.KeyStoreWrapper;

public class Keystore {
    public static void main(String[] args) throws Exception {
        Path configDir = Path.of(args[0]);
        if (args.length == 1) {
            fromLines(configDir);
            return;
        }
        switch (args[1]) {
            case "create" -> KeyStoreWrapper.create().save(configDir, new char[0]);
            case "add-file" -> {
                if (args.length != 4) throw new IllegalArgumentException("usage: add-file KEY FILE");
                KeyStoreWrapper keystore = open(configDir);
                keystore.setFile(args[2], Files.readAllBytes(Path.of(args[3])));
                keystore.save(configDir, new char[0]);
            }
            case "list" -> new TreeSet<>(open(configDir).getSettingNames()).forEach(System.out::println);
            default -> throw new IllegalArgumentException("unknown command " + args[1] + " (create, add-file, list)");
        }
    }

    private static KeyStoreWrapper open(Path configDir) throws Exception {
        KeyStoreWrapper keystore = KeyStoreWrapper.load(configDir);
        if (keystore == null) throw new IllegalStateException("no keystore in " + configDir + ": run create first");
        keystore.decrypt(new char[0]);
        return keystore;
    }

    private static void fromLines(Path configDir) throws Exception {
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
