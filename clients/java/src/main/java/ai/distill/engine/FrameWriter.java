package ai.distill.engine;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/** Writes frames, one compact JSON object and a newline each, flushed; safe to call from any thread. */
final class FrameWriter {
    private final OutputStream out;
    private final int cap;

    FrameWriter(OutputStream out, int cap) {
        this.out = out;
        this.cap = cap;
    }

    /**
     * Writes one message.
     *
     * @throws IllegalArgumentException the frame would be longer than the cap
     * @throws UncheckedIOException the output is closed (Distill is gone)
     */
    void send(Map<String, Object> message) {
        sendRaw(Json.write(message));
    }

    /** Writes one frame already encoded as JSON (one object, no newline). */
    void sendRaw(String json) {
        byte[] bytes = json.getBytes(StandardCharsets.UTF_8);
        if (bytes.length > cap) {
            throw new IllegalArgumentException("a frame of " + bytes.length + " bytes (the limit is " + cap + ")");
        }
        synchronized (this) {
            try {
                out.write(bytes);
                out.write('\n');
                out.flush();
            } catch (IOException e) {
                throw new UncheckedIOException("cannot write to Distill", e);
            }
        }
    }

    /** The UTF-8 length of {@code s}, counted without encoding it. */
    static int utf8Length(String s) {
        int n = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < 0x80) {
                n += 1;
            } else if (c < 0x800) {
                n += 2;
            } else if (Character.isHighSurrogate(c) && i + 1 < s.length()
                    && Character.isLowSurrogate(s.charAt(i + 1))) {
                n += 4;
                i++;
            } else {
                n += 3;
            }
        }
        return n;
    }
}
