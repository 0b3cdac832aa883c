/** A deadline some seconds from now. */
export class Deadline {
  private readonly end: number;

  constructor(seconds: number) {
    this.end = performance.now() + seconds * 1000;
  }

  remaining(): number {
    return Math.max(0, (this.end - performance.now()) / 1000);
  }

  expired(): boolean {
    return this.remaining() === 0;
  }
}
