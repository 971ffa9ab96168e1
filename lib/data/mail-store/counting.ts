import { Transform } from 'node:stream';

/** A pass-through stream that counts the bytes it passes: an attachment's size as both stores keep it. */
export const counting = () => {
  const counter = {
    size: 0,
    stream: new Transform({
      transform(chunk: Buffer, _encoding, done) {
        counter.size += chunk.length;
        done(null, chunk);
      },
    }),
  };
  return counter;
};
