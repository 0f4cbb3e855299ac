"""autofusion.lowering.ascendc"""
