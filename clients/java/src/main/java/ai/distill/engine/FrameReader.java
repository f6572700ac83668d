package ai.distill.engine;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Cuts an input stream into frames: lines ended by {@code \n}, UTF-8, at most a cap long. Blank lines are
 * skipped; a line over the cap is skipped up to its newline and reported as a problem (never buffered without
 * end); so is a line that is not UTF-8.
 */
final class FrameReader {
    /** One line read: its text, or what is wrong with it. */
    static final class Frame {
        final String text;
        final String problem;

        private Frame(String text, String problem) {
            this.text = text;
            this.problem = problem;
        }
    }

    private final InputStream in;
    private final int cap;
    private final byte[] chunk = new byte[1 << 16];
    private int chunkStart;
    private int chunkEnd;
    private byte[] line = new byte[1 << 12];
    private int lineLength;
    private boolean overflowing;
    private final CharsetDecoder utf8 = StandardCharsets.UTF_8.newDecoder()
            .onMalformedInput(CodingErrorAction.REPORT)
            .onUnmappableCharacter(CodingErrorAction.REPORT);

    FrameReader(InputStream in, int cap) {
        this.in = in;
        this.cap = cap;
    }

    /**
     * The next frame, waiting for it.
     *
     * @return the frame, or null at the end of the input (a last line without its newline is dropped)
     * @throws IOException reading failed
     */
    Frame next() throws IOException {
        while (true) {
            if (chunkStart == chunkEnd) {
                int n = in.read(chunk);
                if (n < 0) {
                    return null;
                }
                chunkStart = 0;
                chunkEnd = n;
            }
            int newline = chunkStart;
            while (newline < chunkEnd && chunk[newline] != '\n') {
                newline++;
            }
            append(chunkStart, newline);
            boolean ended = newline < chunkEnd;
            chunkStart = ended ? newline + 1 : chunkEnd;
            if (!ended) {
                continue;
            }
            Frame frame = finishLine();
            if (frame != null) {
                return frame;
            }
        }
    }

    private void append(int from, int to) {
        int n = to - from;
        if (overflowing || n == 0) {
            return;
        }
        if (lineLength + n > cap) {
            overflowing = true;
            lineLength = 0;
            return;
        }
        if (lineLength + n > line.length) {
            line = Arrays.copyOf(line, Math.min(cap, Math.max(lineLength + n, line.length * 2)));
        }
        System.arraycopy(chunk, from, line, lineLength, n);
        lineLength += n;
    }

    private Frame finishLine() {
        int length = lineLength;
        boolean overflowed = overflowing;
        lineLength = 0;
        overflowing = false;
        if (overflowed) {
            return new Frame(null, "a frame longer than " + cap + " bytes (the limit)");
        }
        String text;
        try {
            text = utf8.decode(ByteBuffer.wrap(line, 0, length)).toString();
        } catch (CharacterCodingException e) {
            return new Frame(null, "a frame that is not UTF-8");
        }
        return text.isBlank() ? null : new Frame(text, null);
    }
}
